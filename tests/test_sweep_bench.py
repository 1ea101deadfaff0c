"""The sweep benchmark's reading of Snakemake's console log (pipeline/sweep_bench.py)."""

from __future__ import annotations

from pipeline.sweep_bench import job_seconds

LOG = """\
[Thu Nov 26 17:32:39 2026]
localrule run:
    input: /data/results/queries/app=malt/app_variant=base/level=1/seed=0/part-0.parquet
    jobid: 34
    reason: Missing output files
    wildcards: app=malt, app_variant=base, agent=oracle, model=none, level=1, seed=0
[Thu Nov 26 17:32:41 2026]
rule run_model_smollm2:
    jobid: 35
    threads: 2
[Thu Nov 26 17:32:49 2026]
Finished jobid: 34 (Rule: run)
1 of 3 steps (33%) done
[Thu Nov 26 17:32:50 2026]
localrule run:
    jobid: 36
    wildcards: app=routing, agent=null, model=none
[Thu Nov 26 17:32:55 2026]
Finished jobid: 36 (Rule: run)
[Thu Nov 26 17:33:49 2026]
Finished jobid: 35 (Rule: run_model_smollm2)
"""


def test_job_seconds_pairs_each_jobs_start_and_finish_per_rule():
    assert job_seconds(LOG) == {
        "run": {"jobs": 2, "seconds": 15.0},
        "run_model_smollm2": {"jobs": 1, "seconds": 68.0},
    }
    assert job_seconds("") == {}


def test_job_seconds_by_a_wildcard_splits_each_rule_by_its_value():
    assert job_seconds(LOG, by="app") == {
        "run:malt": {"jobs": 1, "seconds": 10.0},
        "run:routing": {"jobs": 1, "seconds": 5.0},
        "run_model_smollm2": {"jobs": 1, "seconds": 68.0},
    }
