# Stage generate: seeded, validated queries per (app, app variant, level, seed), as many
# as the grid's largest cell of them needs (smaller cells read a prefix).
#
# Priorities order the jobs that are ready at once: generation first (the lab levels'
# generate -> run chains are the longest), reference runs next, the model job last. The
# model job takes every slot; started early, it would hold back the chains still to run.


rule generate:
    """Generate the queries of one (app, app_variant, level, seed) and validate each one."""
    output:
        # update: kept while the job runs, so a rerun (its count param changed after a direct
        # run lengthened the shard) finds it long enough and generates nothing
        update(NG.pattern("queries")),
    params:
        queries=NG.queries_param,
        sets=NG.app_sets,
        data=NG.data_dir,
    log:
        NG.log("generate"),
    priority: 2
    shell:
        "{STAGE_CMD} generate --app {wildcards.app} --level {wildcards.level}"
        " --seed {wildcards.seed} --queries {params.queries} {params.sets}"
        " --data-dir {params.data} > {log} 2>&1"
