"""LLM agents through the whole pipeline: the real CPU vLLM server, a multirun over the
temperature, a dead endpoint, and the SLURM profile's plan with GPU resources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import ROOT
from pipeline.serving.models import vllm_python
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint
from tests.conftest import SLOTS, require, require_root
from tests.test_dag import SNAKEMAKE, job_stats

# The embedded model on 2 CPU cores: a sweep of five cells is one server's work, longer
# than the suite's default timeout when the machine is shared.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


def vllm_processes() -> list[str]:
    out = subprocess.run(
        ["pgrep", "-af", "vllm.entrypoints.openai"], capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


EMBEDDED_GRID = """\
name: embedded
apps: [malt, netllmbench]
agents: [zero_shot]
models: [smollm2]
levels: [1]
seeds: [0]
queries: 2
variants: [[], [agent.decoding=json], [agent.decoding=tools]]
exclude: [{app: netllmbench, variant: base}]  # free text on netllmbench: long repair chains
"""


@pytest.fixture(scope="module")
def embedded_sweep(tmp_path_factory) -> Path:
    """One sweep, one managed CPU vLLM server for five cells: capacity planning in free
    text, and each app's replies constrained to its action schema and as forced tool calls."""
    require(vllm_python().exists(), "the CPU vLLM engine is not installed (make setup)")
    require_root("netllmbench needs root")
    tmp = tmp_path_factory.mktemp("embedded")
    (tmp / "plugins" / "conf" / "grid").mkdir(parents=True)
    (tmp / "plugins" / "conf" / "grid" / "embedded.yaml").write_text(EMBEDDED_GRID)
    env = {**os.environ, "NETGAUGE_APP_PATH": str(tmp / "plugins")}
    data = tmp / "data"
    before = vllm_processes()
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "sweep", "--config", "grid=embedded", f"data_dir={data}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert vllm_processes() == before  # the server was stopped with its job
    return data


def test_capacity_planning_with_the_embedded_model_end_to_end(embedded_sweep):
    """Free-text replies on malt: every call, token and step counted into Parquet."""
    con = connect(embedded_sweep)
    base = "variant = 'base'"
    episodes = con.execute(
        "SELECT query_id, model, agent, outcome, model_calls, reprompts, example_reprompts, "
        "master_extractions, prompt_tokens, completion_tokens, tokens_per_s FROM episodes "
        f"WHERE {base} ORDER BY query_id"
    ).fetchall()
    assert len(episodes) == 2
    allowed = {
        "correct",
        "wrong",
        "parse_error",
        "exec_error",
        "timeout",
        "resource_limit",
        "blocked",
    }  # a real model's answers: anything but an environment failure
    for (
        _,
        model,
        agent,
        outcome,
        calls,
        reprompts,
        examples,
        master,
        prompt,
        completion,
        speed,
    ) in episodes:
        assert (model, agent) == ("smollm2", "zero_shot")
        assert outcome in allowed
        assert calls == 1 + reprompts + examples + master and master == 0
        assert prompt > 500 and completion > 0 and speed > 0
    steps = con.execute(f"SELECT count(*), min(length(reply)) FROM steps WHERE {base}").fetchone()
    assert steps[0] == 2 and steps[1] > 0
    calls = con.execute(
        "SELECT count(*), sum(prompt_tokens), min(tokens_per_s), min(latency_s) FROM calls "
        f"WHERE served_model = 'smollm2' AND {base}"
    ).fetchone()
    assert calls[0] == sum(e[4] for e in episodes)
    assert calls[1] == sum(e[8] for e in episodes)
    assert calls[2] > 0 and calls[3] > 0
    purposes = {
        p for (p,) in con.execute(f"SELECT DISTINCT purpose FROM calls WHERE {base}").fetchall()
    }
    assert purposes <= {"act", "reprompt", "example"}
    assert (embedded_sweep / "logs" / "serving" / "smollm2-135m-instruct.log").exists()


def test_multirun_over_the_temperature_keeps_both_variants(tmp_path):
    """Two sampling temperatures are two cells, side by side, and a rerun redoes nothing.
    The model is an endpoint of our own (what is tested is the cells' identity; the real
    model runs end to end in the embedded sweep above), which records the temperature
    each request carried."""
    with chat_endpoint(lambda body: "no code here") as (url, seen):
        args = [
            sys.executable,
            "-m",
            "pipeline.run",
            "-m",
            "agent=zero_shot",
            "model=smollm2",
            "model.endpoint=external",
            f"model.base_url={url}",
            "model.temperature=0,0.7",
            "queries=1",
            f"data_dir={tmp_path}",
        ]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        rows = (
            connect(tmp_path)
            .execute(
                "SELECT c.variant_label, count(*), min(e.model_calls) FROM episodes e "
                "JOIN cells c USING (app, model, agent, level, seed, queries, variant) "
                "GROUP BY ALL ORDER BY ALL"
            )
            .fetchall()
        )
        assert [n for _, n, _ in rows] == [1, 1]  # one cell per temperature
        assert ["model.temperature=0.7" in label for label, _, _ in rows] == [False, True]
        assert all(calls >= 1 for _, _, calls in rows)  # the model was asked
        assert {body["temperature"] for body in seen} == {0.0, 0.7}
        asked = len(seen)
        shards = {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.parquet")}
        again = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(seen) == asked
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.parquet")} == shards


def test_structured_decoding_on_the_embedded_model(embedded_sweep):
    """Replies constrained to each app's action schema, and forced tool calls, end to end."""
    con = connect(embedded_sweep)
    rows = con.execute(
        "SELECT e.app, c.variant_label, count(*), count(*) FILTER (WHERE e.outcome IN "
        "('env_error', 'score_error')) FROM episodes e "
        "JOIN cells c USING (app, model, agent, level, seed, queries, variant) "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [
        ("malt", 'agent.decoding="json"', 2, 0),
        ("malt", 'agent.decoding="tools"', 2, 0),
        ("malt", "as configured", 2, 0),
        ("netllmbench", 'agent.decoding="json"', 2, 0),
        ("netllmbench", 'agent.decoding="tools"', 2, 0),
    ]
    calls = con.execute(
        "SELECT app, c.variant_label, finish_reason, response FROM calls "
        "JOIN cells c USING (app, model, agent, level, seed, queries, variant) "
        "WHERE variant <> 'base'"
    ).fetchall()
    action = {
        "malt": ("submit_code", {"code"}),
        "netllmbench": ("run_command", {"machine", "command"}),
    }
    for app, label, finish, response in calls:
        name, keys = action[app]
        if "json" in label:  # decoding constrained to the action's schema
            assert "[tool call]" not in response
            if finish == "stop":  # (a reply cut at max_tokens is cut JSON)
                assert set(json.loads(response)) == keys, response
        else:  # a forced call of the action, its arguments constrained to the schema
            assert response.startswith(f"\n[tool call] {name}("), response
            if finish != "length":
                arguments = response.split(f"[tool call] {name}(", 1)[1][:-1]
                assert set(json.loads(arguments)) == keys, response
    assert len(calls) >= 8


def test_dead_endpoint_is_a_clear_error_and_keeps_written_rows(tmp_path):
    common = [f"data_dir={tmp_path}", "queries=2", "level=1"]
    ok = subprocess.run(
        [sys.executable, "-m", "pipeline.run", "agent=oracle", *common],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    kept = sorted((tmp_path / "results").rglob("*.parquet"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.run",
            "agent=zero_shot",
            "model=smollm2",
            "model.endpoint=external",
            "model.base_url=http://127.0.0.1:9/v1",
            *common,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "127.0.0.1:9" in done.stderr and "error:" in done.stderr
    assert sorted((tmp_path / "results").rglob("*.parquet")) == kept
    assert not list((tmp_path / "results" / "episodes").glob("*/model=smollm2"))


def test_slurm_profile_plans_gpu_jobs(tmp_path):
    done = subprocess.run(
        [
            SNAKEMAKE,
            "--profile",
            "profiles/slurm",
            "-n",
            "sweep",
            "--config",
            "grid=gpu",
            f"data_dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    stats = job_stats(out)
    # 4 apps x 3 levels x 2 seeds = 24 cell groups: reference agents run per cell (x2),
    # every agent is scored per cell (x6), and one job serves all cells of the model.
    assert stats["run_model_qwen2_5_7b"] == 1 and stats["run"] == 48 and stats["score"] == 144
    block = out.split("rule run_model_qwen2_5_7b:", 1)[1].split("\n[", 1)[0]
    resources = next(line for line in block.splitlines() if "resources:" in line)
    assert "gpu=1" in resources and "runtime=240" in resources
    assert not Path(tmp_path / "results").exists()
