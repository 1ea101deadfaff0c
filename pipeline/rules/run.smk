# Stage run: the cell's agent plays every query in the app's environment.
# Reference agents (model=none): one job per cell. LLM agents: one job per model that
# plays all of the model's cells on one served instance (started once, stopped after).


rule run:
    """Play one cell's queries; resumes from its checkpoint after a crash."""
    input:
        queries=NG.queries_input,
    output:
        # update: kept while the job runs, so a rerun the queries shard's new mtime caused
        # finds them made with the cell's config and plays nothing (pipeline/runner.py)
        update(NG.pattern("transcripts")),
    wildcard_constraints:
        model="none",
    params:
        sets=NG.cell_sets,
        data=NG.data_dir,
    log:
        NG.log("run"),
    priority: 1  # before the model job (pipeline/rules/generate.smk)
    shell:
        "{STAGE_CMD} run --app {wildcards.app} --model {wildcards.model}"
        " --agent {wildcards.agent} --level {wildcards.level} --seed {wildcards.seed}"
        " --queries {wildcards.queries} {params.sets} --data-dir {params.data} > {log} 2>&1"


for _model in NG.llm_models:

    rule:
        name:
            NG.rule_name(_model)
        input:
            NG.model_shards("queries", _model),
            plan=NG.plan_path,
        output:
            update(NG.model_shards("transcripts", _model)),  # as the run rule's
        params:
            model=_model,
            plan=NG.plan.name,
            data=NG.data_dir,
        threads: NG.plan.threads(_model, workflow.cores)
        resources:
            gpu=NG.plan.gpus(_model),
        log:
            str(NG.root / "logs" / "run" / f"model={_model}.log"),
        shell:
            "{STAGE_CMD} run-model --grid {params.plan} --model {params.model}"
            " --data-dir {params.data} > {log} 2>&1"
