# NetGauge workflow: a table of contents. Logic lives in pipeline/ (pipeline/dag.py).
#
#   snakemake --cores 32 sweep                       # the default grid
#   snakemake --cores 2 sweep --config grid=smoke    # another grid (conf/grid/*.yaml)
#   snakemake -n sweep                               # list the jobs, run nothing
#
# Stages: plan -> generate -> run -> score -> summarize -> report (one .smk each).

from pipeline.dag import ANALYSIS_CMD, WILDCARDS, STAGE_CMD, Workflow
from pipeline.slurm_executor import cap_status_interval, patch_status_query

NG = Workflow.from_config(config, main=workflow.is_main_process)
patch_status_query()  # under --executor slurm: a job cancelled by scancel ends the wait
cap_status_interval()  # ... and, on a local cluster, status checks stay 2 s apart

wildcard_constraints:
    **WILDCARDS,


include: "pipeline/rules/plan.smk"
include: "pipeline/rules/generate.smk"
include: "pipeline/rules/run.smk"
include: "pipeline/rules/score.smk"
include: "pipeline/rules/summarize.smk"
include: "pipeline/rules/report.smk"


# Run by Snakemake itself even under a cluster executor: each takes a second or two of CPU
# (plan, summarize and report read every cell; score one), less than a cluster job costs.
localrules:
    plan,
    score,
    summarize,
    report,


rule sweep:
    """Every cell of the grid generated, run, scored, summarised and reported."""
    default_target: True
    input:
        NG.summary_paths,
        NG.report_path,


onsuccess:
    NG.print_summary()
