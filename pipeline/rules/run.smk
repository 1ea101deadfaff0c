# Stage run: the cell's agent plays every query in the app's environment.


rule run:
    """Play one cell's queries; resumes from its checkpoint after a crash."""
    input:
        queries=NG.pattern("queries"),
    output:
        NG.pattern("transcripts"),
    params:
        queries=NG.cell_param,
        data=NG.data_dir,
    log:
        NG.log("run"),
    shell:
        "{STAGE_CMD} run --app {wildcards.app} --model {wildcards.model}"
        " --agent {wildcards.agent} --level {wildcards.level} --seed {wildcards.seed}"
        " --queries {params.queries} --data-dir {params.data} > {log} 2>&1"
