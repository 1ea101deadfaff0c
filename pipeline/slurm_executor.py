"""A fix for snakemake-executor-plugin-slurm 2.8.0: a cancelled job must end the wait.

sacct reports a job cancelled with scancel as `CANCELLED by <uid>`. The plugin compares
the whole string with its failure states, finds no match, and takes the job for one still
running, so the workflow waits for it forever (found on the local cluster, see
tests/test_slurm.py). `patch_status_query` wraps the plugin's status query so every state
keeps its first word only; the plugin then reports the job failed, as for any other
failure, and a rerun of the same command redoes it. It patches only a plugin Snakemake has
already loaded (so only when the SLURM executor is in use) and only once.
"""

from __future__ import annotations

import sys
from typing import Any

PLUGIN = "snakemake_executor_plugin_slurm"


def state_word(state: str) -> str:
    """`CANCELLED by 0` -> `CANCELLED`; other states unchanged."""
    return state.split()[0] if state.strip() else state


def patch_status_query() -> bool:
    """Wrap the loaded plugin's `query_job_status`; True if it is (now) wrapped."""
    plugin = sys.modules.get(PLUGIN)
    if plugin is None or not hasattr(plugin, "query_job_status"):
        return False
    query = plugin.query_job_status
    if getattr(query, "netgauge_wrapped", False):
        return True

    async def query_job_status(command: str, logger: Any) -> tuple[Any, Any]:
        statuses, seconds = await query(command, logger)
        if statuses is not None:
            statuses = {job: state_word(state) for job, state in statuses.items()}
        return statuses, seconds

    query_job_status.netgauge_wrapped = True  # type: ignore[attr-defined]
    plugin.query_job_status = query_job_status
    return True
