# Stage score: verdicts from the transcripts and the ground truth.


rule score:
    """Score one cell: write its episodes, steps, calls and cells shards."""
    input:
        queries=NG.queries_input,
        transcripts=NG.pattern("transcripts"),
    output:
        episodes=NG.pattern("episodes"),
        steps=NG.pattern("steps"),
        calls=NG.pattern("calls"),
        cells=NG.pattern("cells"),
    params:
        sets=NG.cell_sets,
        data=NG.data_dir,
    log:
        NG.log("score"),
    shell:
        "{STAGE_CMD} score --app {wildcards.app} --model {wildcards.model}"
        " --agent {wildcards.agent} --level {wildcards.level} --seed {wildcards.seed}"
        " --queries {wildcards.queries} {params.sets} --data-dir {params.data} > {log} 2>&1"
