"""Where `make sweep`'s time goes: the default grid from empty, per stage and per model call.

    python -m pipeline.bench --only sweep

Runs `snakemake --cores <n> sweep --config grid=default` on a fresh data directory (the
setup is warm: venvs, images and the converted model exist) and reports:

- the wall-clock of the whole sweep;
- per rule (plan, generate, run, run_model_<model>, score, summarize, report): the jobs
  and the seconds they ran, summed, read from Snakemake's own job start and finish lines;
- inside the LLM job, from the results: the server's start-to-ready time (its log), the
  model calls' prefill (time to first token) and decode (the rest of each call) summed
  over calls, the agents' code in the sandbox (`steps.exec_s`) and the cells' episodes'
  time outside both (the client, parsing, the environments).

The sums over calls exceed the job's wall-clock when calls overlap (episodes run in
flight at once).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.config import ROOT
from pipeline.views import connect

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\S+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")


def job_seconds(log: str, by: str | None = None) -> dict[str, dict[str, float]]:
    """Per rule: {"jobs": n, "seconds": summed run time} from Snakemake's console log.

    `by` names a wildcard (e.g. "app"): then per rule and value of it, keyed
    "<rule>:<value>" (jobs without that wildcard keep the rule's name)."""
    stamp: datetime | None = None
    rule: str | None = None
    job: str | None = None
    started: dict[str, tuple[datetime, str]] = {}
    per_rule: dict[str, dict[str, float]] = defaultdict(lambda: {"jobs": 0, "seconds": 0.0})
    for line in log.splitlines():
        if m := _STAMP.match(line.strip()):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := _RULE.match(line.strip()):
            rule, job = m.group(1), None
        elif (m := _JOBID.match(line)) and rule is not None and stamp is not None:
            job = m.group(1)
            started[job] = (stamp, rule)
        elif (m := _WILDCARDS.match(line)) and by and job in started:
            values = dict(kv.split("=", 1) for kv in m.group(1).split(", ") if "=" in kv)
            if by in values:
                when, name = started[job]
                started[job] = (when, f"{name}:{values[by]}")
        elif (m := _DONE.match(line.strip())) and stamp is not None and m.group(1) in started:
            when, key = started.pop(m.group(1))
            entry = per_rule[key]
            entry["jobs"] += 1
            entry["seconds"] += (stamp - when).total_seconds()
    return dict(per_rule)


def cpu_busy_s() -> float:
    """CPU seconds every CPU of the machine spent not idle since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in fields[:8]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def llm_breakdown(data: Path) -> dict[str, Any]:
    """Prefill, decode, sandbox and the rest of the LLM cells' time, from the results."""

    con = connect(data)
    calls = con.execute(
        "SELECT count(*), sum(coalesce(ttft_s, 0)), sum(latency_s - coalesce(ttft_s, 0)), "
        "sum(completion_tokens) FROM calls"
    ).fetchone()
    steps = con.execute("SELECT sum(exec_s) FROM steps WHERE model <> 'none'").fetchone()
    episodes = con.execute(
        "SELECT count(*), sum(latency_s) FROM episodes WHERE model <> 'none'"
    ).fetchone()
    n_calls, prefill, decode, tokens = calls
    out = {
        "llm_calls": int(n_calls or 0),
        "llm_prefill_s_summed": round(prefill or 0.0, 1),
        "llm_decode_s_summed": round(decode or 0.0, 1),
        "llm_completion_tokens": int(tokens or 0),
        "llm_sandbox_s_summed": round(steps[0] or 0.0, 1),
        "llm_episodes": int(episodes[0] or 0),
        "llm_episode_s_summed": round(episodes[1] or 0.0, 1),
    }
    return out


def reference_verdicts(data: Path) -> dict[str, Any]:
    """The reference agents' verdicts, to show a faster sweep judged the same: per agent
    the episodes and the correct-and-safe ones, and episodes ending in env_error."""

    con = connect(data)
    out: dict[str, Any] = {}
    for agent, n, good in con.execute(
        "SELECT agent, count(*), count(*) FILTER (WHERE correct AND safe) FROM episodes "
        "WHERE model = 'none' GROUP BY agent ORDER BY agent"
    ).fetchall():
        out[f"{agent}_episodes"] = int(n)
        out[f"{agent}_correct_and_safe"] = int(good)
    (errors,) = con.execute("SELECT count(*) FROM episodes WHERE outcome = 'env_error'").fetchone()
    out["env_error_episodes"] = int(errors)
    return out


def server_ready_s(data: Path) -> float | None:
    """Start-to-ready of the model server, as the model job's log states it."""
    for log in sorted((data / "logs" / "run").glob("model=*.log")):
        found = re.findall(r"ready after ([\d.]+) s", log.read_text(errors="replace"))
        if found:
            return float(found[-1])
    return None


def run(
    grid: str = "default", cores: int | None = None, log_to: Path | None = None
) -> dict[str, Any]:
    """Run the sweep on an empty data directory; `log_to` keeps Snakemake's console log."""
    cores = cores or 2 * len(os.sched_getaffinity(0))  # the Makefile's job slots
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    with tempfile.TemporaryDirectory(prefix="netgauge-sweep-") as tmp:
        data = Path(tmp)
        cmd = [snakemake, "--cores", str(cores), "sweep", "--config", f"grid={grid}"]
        started, busy = time.perf_counter(), cpu_busy_s()
        proc = subprocess.run(
            [*cmd, f"data_dir={data}"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        wall, busy = time.perf_counter() - started, cpu_busy_s() - busy
        if log_to is not None:
            log_to.parent.mkdir(parents=True, exist_ok=True)
            log_to.write_text(proc.stderr)
        if proc.returncode != 0:
            return {"failed": proc.stderr[-2000:], "wall_s": round(wall, 1)}
        figures: dict[str, Any] = {"grid": grid, "cores": cores, "sweep_wall_s": round(wall, 1)}
        # the machine's CPUs busy over the sweep (all processes: the machine should be idle)
        figures["cpu_busy_fraction"] = round(busy / (wall * os.cpu_count()), 2)
        for rule, entry in sorted(job_seconds(proc.stderr).items()):
            figures[f"rule_{rule}_jobs"] = int(entry["jobs"])
            figures[f"rule_{rule}_s_summed"] = round(entry["seconds"], 1)
        for key, entry in sorted(job_seconds(proc.stderr, by="app").items()):
            if ":" in key:
                figures[f"rule_{key.replace(':', '_app_')}_s_summed"] = round(entry["seconds"], 1)
        if log_to is not None:
            figures["snakemake_log"] = str(log_to)
        figures |= reference_verdicts(data)
        figures |= llm_breakdown(data)
        ready = server_ready_s(data)
        if ready is not None:
            figures["llm_server_start_to_ready_s"] = ready
    figures["target_sweep_wall_s"] = 600
    return figures
