# Stage generate: seeded, validated queries per (app, level, seed).


rule generate:
    """Generate the queries of one (app, level, seed) and validate each one."""
    output:
        NG.pattern("queries"),
    params:
        queries=NG.queries_param,
        data=NG.data_dir,
    log:
        NG.log("generate"),
    shell:
        "{STAGE_CMD} generate --app {wildcards.app} --level {wildcards.level}"
        " --seed {wildcards.seed} --queries {params.queries} --data-dir {params.data}"
        " > {log} 2>&1"
