"""What decoding modes do to a model's replies and speed (`pipeline.bench --only decoding`).

One sweep (grid DECODING_GRID) plays the same queries of malt L1 and netllmbench L1 with
the embedded model on one managed CPU vLLM server, in each decoding mode: free text,
JSON-schema constrained (`response_format`) and forced tool calls. Per app and mode:

  - episodes: parse-error rate, correctness, repair calls per episode;
  - the turns' `act` calls (repair calls left out: their prompts differ): median latency
    per call, time to first token (where the server compiles the schema's grammar) and
    time per further token (where the grammar masks every decoded token), each also as
    a ratio to text mode's, and the mean reply length (a constrained reply is often far
    shorter, so the per-call ratio mostly measures length).

The load average before and after the sweep is recorded: on a shared machine other
users' work moves every latency. Environment: $NETGAUGE_BENCH_QUERIES (per app, default
10); $NETGAUGE_BENCH_KEEP=1 keeps the sweep's results (the folder is printed);
$NETGAUGE_BENCH_FROM=<that folder> computes the figures from a kept sweep instead of
playing a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.config import ROOT
from pipeline.records import code_version
from pipeline.views import connect

DECODING_GRID = """\
name: decoding
apps: [malt, netllmbench]
agents: [zero_shot]
models: [smollm2]
levels: [1]
seeds: [0]
queries: {queries}
variants: [[], [agent.decoding=json], [agent.decoding=tools]]
exclude: []
"""
SWEEP_FILE = "sweep.json"  # in a kept folder: the sweep's own figures


def run() -> dict[str, Any]:
    """The figures of one sweep (or of a kept one); see the module docstring."""
    kept = os.environ.get("NETGAUGE_BENCH_FROM")
    if kept:
        folder = Path(kept)
        return {**json.loads((folder / SWEEP_FILE).read_text()), **figures(folder / "data")}
    with contextlib.ExitStack() as stack:
        if os.environ.get("NETGAUGE_BENCH_KEEP") == "1":
            tmp = tempfile.mkdtemp(prefix="netgauge-decoding-")
            print(f"  the sweep's results stay in {tmp}", flush=True)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="netgauge-decoding-"))
        sweep = _sweep(Path(tmp), int(os.environ.get("NETGAUGE_BENCH_QUERIES", "10")))
        (Path(tmp) / SWEEP_FILE).write_text(json.dumps(sweep))
        return {**sweep, **figures(Path(tmp) / "data")}


def _sweep(tmp: Path, queries: int) -> dict[str, Any]:
    grids = tmp / "plugins" / "conf" / "grid"
    grids.mkdir(parents=True)
    (grids / "decoding.yaml").write_text(DECODING_GRID.format(queries=queries))
    env = {**os.environ, "NETGAUGE_APP_PATH": str(tmp / "plugins")}
    cmd = [
        str(Path(sys.executable).with_name("snakemake")), "--cores", "2", "sweep",
        "--config", "grid=decoding", f"data_dir={tmp}/data", "--quiet", "all",
    ]  # fmt: skip
    before = os.getloadavg()[0]
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, env=env, stdout=subprocess.DEVNULL)
    return {
        "queries_per_app": queries,
        "sweep_code_version": code_version(),
        "sweep_s": round(time.perf_counter() - started, 1),
        "load_average_1min_before": round(before, 2),
        "load_average_1min_after": round(os.getloadavg()[0], 2),
    }


MODE = "coalesce(json_extract_string(c.settings, '$.agent.decoding'), 'text')"
CELLS = "JOIN cells c USING (app, model, agent, level, seed, queries, variant)"
# Per app and mode: the act calls' count, latency, time to first token, time per further
# token and mean reply length.
ACTS = f"""
SELECT k.app, {MODE}, count(*), median(k.latency_s), median(k.ttft_s),
       median((k.latency_s - k.ttft_s) / (k.completion_tokens - 1))
           FILTER (WHERE k.completion_tokens > 1),
       avg(k.completion_tokens)
FROM calls k {CELLS} WHERE k.purpose = 'act' GROUP BY ALL ORDER BY ALL
"""


def figures(data: Path) -> dict[str, Any]:
    """The figures of the results under `data` (see the module docstring)."""

    con = connect(data)
    rows = con.execute(
        f"SELECT e.app, {MODE}, count(*), avg((e.outcome = 'parse_error')::INT), "
        "avg(e.correct::INT), avg(e.reprompts + e.example_reprompts) "
        f"FROM episodes e {CELLS} GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    out: dict[str, Any] = {}
    for app, mode, n, parse_errors, correct, repairs in rows:
        out[f"{app}_{mode}_episodes"] = n
        out[f"{app}_{mode}_parse_error_rate"] = round(parse_errors, 3)
        out[f"{app}_{mode}_correct_rate"] = round(correct, 3)
        out[f"{app}_{mode}_repair_calls_per_episode"] = round(repairs, 2)
    acts = con.execute(ACTS).fetchall()
    text = {app: row for app, mode, *row in acts if mode == "text"}
    for app, mode, n, call_s, ttft_s, token_s, tokens in acts:
        key = f"{app}_{mode}_act"
        out[f"{key}_calls"] = n
        out[f"{key}_completion_tokens_mean"] = round(tokens, 1)
        for name, value, column in (
            ("s", call_s, 1),
            ("ttft_s", ttft_s, 2),
            ("token_s", token_s, 3),
        ):
            out[f"{key}_median_{name}"] = round(value, 4)
            if app in text and text[app][column]:
                out[f"{key}_{name}_ratio_to_text"] = round(value / text[app][column], 2)
    return out
