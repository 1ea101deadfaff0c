# Stage score: verdicts from the transcripts and the ground truth.


rule score:
    """Score one cell: write its episodes, steps and calls shards."""
    input:
        queries=NG.pattern("queries"),
        transcripts=NG.pattern("transcripts"),
    output:
        episodes=NG.pattern("episodes"),
        steps=NG.pattern("steps"),
        calls=NG.pattern("calls"),
    params:
        queries=NG.cell_param,
        data=NG.data_dir,
    log:
        NG.log("score"),
    shell:
        "{STAGE_CMD} score --app {wildcards.app} --model {wildcards.model}"
        " --agent {wildcards.agent} --level {wildcards.level} --seed {wildcards.seed}"
        " --queries {params.queries} --data-dir {params.data} > {log} 2>&1"
