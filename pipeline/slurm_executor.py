"""Two changes to snakemake-executor-plugin-slurm 2.8.0: a cancelled job must end the
wait, and a local cluster's jobs are seen done within seconds.

sacct reports a job cancelled with scancel as `CANCELLED by <uid>`. The plugin compares
the whole string with its failure states, finds no match, and takes the job for one still
running, so the workflow waits for it forever (found on the local cluster, see
tests/test_slurm.py). `patch_status_query` wraps the plugin's status query so every state
keeps its first word only; the plugin then reports the job failed, as for any other
failure, and a rerun of the same command redoes it. It patches only a plugin Snakemake has
already loaded (so only when the SLURM executor is in use) and only once.

The plugin waits 10 s longer before each status check that found no job finished (up to
180 s; back to `--slurm-init-seconds-before-status-checks` when one has), which spares a
real site's slurmdbd. A local cluster's sacct answers in milliseconds, and a DAG level's
jobs wait for that check: a job of 15 s was seen done after 2 + 12 + 22 = 36 s.
`cap_status_interval` holds the wait at most `$NETGAUGE_SLURM_POLL_MAX_S` seconds, a
variable the local cluster's clients get (pipeline/cluster/layout.py: `client_env`) and a
real site's do not; without it the plugin's wait is unchanged.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any

from pipeline.errors import ConfigError

PLUGIN = "snakemake_executor_plugin_slurm"
POLL_MAX_ENV = "NETGAUGE_SLURM_POLL_MAX_S"
_INTERVAL = "next_seconds_between_status_checks"  # the executor's wait before its next check


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


def poll_max_s() -> float | None:
    """`$NETGAUGE_SLURM_POLL_MAX_S` as seconds, None if unset or empty."""
    raw = os.environ.get(POLL_MAX_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= 180:
        raise ConfigError(f"${POLL_MAX_ENV} is {raw!r}; expected seconds in (0, 180]")
    return value


class _Capped(property):
    """The executor's interval property with a setter that holds the value at most `cap`."""

    def __init__(self, base: property, cap: float) -> None:
        def capped(executor: Any, value: float | None) -> None:
            base.fset(executor, None if value is None else min(value, cap))  # type: ignore[misc]

        super().__init__(base.fget, capped, base.fdel, base.__doc__)
        self.base, self.cap = base, cap


def cap_status_interval() -> bool:
    """Under `$NETGAUGE_SLURM_POLL_MAX_S`, make the loaded plugin's executor wait at most that
    long between status checks; True if it is (now) capped."""
    plugin = sys.modules.get(PLUGIN)
    cap = poll_max_s()
    executor = getattr(plugin, "Executor", None)
    if cap is None or executor is None:
        return False
    current = inspect.getattr_static(executor, _INTERVAL, None)
    if isinstance(current, _Capped):
        if current.cap == cap:
            return True
        current = current.base
    if not isinstance(current, property) or current.fset is None:
        return False
    setattr(executor, _INTERVAL, _Capped(current, cap))
    return True
