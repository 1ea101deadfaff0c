"""The controller's records of jobs, read with sacct (slurmdbd keeps them after jobs end).

The Snakemake executor names every job of one run after the run's id and puts the rule and
its wildcards in the job's comment (`rule_<rule>_wildcards_<values>`); `JobRecord.rule`
reads the rule back.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime

from pipeline.errors import EnvironmentFailure

FIELDS = ("JobIDRaw", "JobName", "State", "NodeList", "Comment", "ExitCode", "ElapsedRaw")


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    name: str
    state: str  # COMPLETED, FAILED, CANCELLED, RUNNING, ... ("CANCELLED by 0" reads CANCELLED)
    nodes: str
    comment: str
    exit_code: str
    elapsed_s: int

    @property
    def rule(self) -> str:
        """The Snakemake rule the job ran ("" for a job not submitted by the executor)."""
        if not self.comment.startswith("rule_"):
            return ""
        return self.comment.removeprefix("rule_").partition("_wildcards_")[0]

    @property
    def wildcards(self) -> str:
        return self.comment.partition("_wildcards_")[2]


def jobs(env: dict[str, str], since: datetime) -> list[JobRecord]:
    """Every job (allocations, not steps) the cluster in `env` accounted since `since`."""
    done = subprocess.run(
        ["sacct", "-X", "-a", "-P", "-n", "-S", since.strftime("%Y-%m-%dT%H:%M:%S"),
         "-E", "now", "-o", ",".join(FIELDS)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise EnvironmentFailure(f"sacct failed ({done.returncode}): {done.stderr.strip()}")
    records = []
    for line in done.stdout.splitlines():
        parts = line.split("|")
        if len(parts) != len(FIELDS):
            continue
        job_id, name, state, nodes, comment, exit_code, elapsed = parts
        state = state.split()[0] if state else state
        records.append(JobRecord(job_id, name, state, nodes, comment, exit_code, int(elapsed or 0)))
    return records
