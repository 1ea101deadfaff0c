"""NetGauge inside Inspect: `inspect eval pipeline/inspect_task.py@netgauge` end to end on
the MALT app (its real generator, zygote sandbox and scorer) with Inspect's openai
provider against an OpenAI-compatible endpoint of our own (tests/chat_endpoint.py: the
model boundary is faked, Inspect and NetGauge's task are not); then its log imported
into the Parquet tables and read back through the views."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.util import JSONSchema

from analysis.__main__ import main
from pipeline import answers, registry
from pipeline.build import make_app
from pipeline.config import ROOT, compose, load_choice
from pipeline.core import diagnostics
from pipeline.errors import ConfigError
from pipeline.generate import generate, read_queries
from pipeline.inspect_task import _choice, _tool, netgauge
from pipeline.serving.client import ToolCall
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint

WRONG = "def process_graph(graph):\n    return 'no idea'\n"
PEEK = "def process_graph(graph):\n    return graph.number_of_nodes()\n"


def test_a_seed_of_the_other_split_is_refused_before_anything_runs(tmp_path) -> None:
    with pytest.raises(ConfigError, match="seed=2 belongs to the train split"):
        netgauge(app="malt", seed=2, data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="agent=oracle plays without a model"):
        netgauge(app="malt", agent="oracle", data_dir=str(tmp_path))


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "conf" / "app").glob("*.yaml")))
def test_every_apps_tools_and_schema_pass_to_inspect_as_they_are(name, tmp_path) -> None:
    """react_tools and json agents hand the app's action, answer and diagnostics to Inspect
    (ToolInfo, ResponseSchema): each converts with its parameters and required keys kept."""
    level = registry.APPS.get(str(load_choice("app", name).kind)).levels[0]
    cfg = compose([f"app={name}", f"level={level}", "model=none", f"data_dir={tmp_path}"])
    fmt = make_app(cfg).reply_format
    tools = [*answers.actions(fmt), *diagnostics(fmt)]
    assert tools, f"{name} offers no action tool"
    for action in tools:
        function = action.tool()["function"]
        info = _tool(function)
        assert info.name == function["name"]
        assert sorted(info.parameters.properties) == sorted(function["parameters"]["properties"])
        assert info.parameters.required == function["parameters"].get("required", [])
    spec = answers.json_action(fmt).response_format()["json_schema"]
    schema = JSONSchema.model_validate(spec["schema"])
    assert sorted(schema.properties or {}) == sorted(spec["schema"].get("properties", {}))
    assert _choice({"type": "function", "function": {"name": "x"}}).name == "x"
    assert (_choice("required"), _choice("auto")) == ("any", "auto")


@pytest.mark.integration
def test_inspect_eval_plays_malt_and_its_log_imports_into_the_tables(tmp_path, capsys) -> None:
    """The task's default agent, react_tools: each episode's model first calls the
    diagnostic run_code, sees its result, then submits (the oracle's code for the first
    query, a wrong answer for the second) as native tool calls; two epochs, imported as
    trials 0 and 1."""
    data = tmp_path / "data"
    cfg = compose(["app=malt", "model=none", "queries=2", f"data_dir={data}"])
    app = make_app(cfg)
    first, second = read_queries(generate(cfg, app), limit=2)
    oracle = re.search(r"```python\n(.*?)```", app.oracle_reply(first, 1, first.prompt), re.S)
    codes = {first.prompt: oracle.group(1), second.prompt: WRONG}

    def answer(body: dict) -> ToolCall:
        asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
        looked = any("Observation (run_code)" in m["content"] for m in body["messages"])
        if not looked:
            return ToolCall("run_code", json.dumps({"code": PEEK}))
        return ToolCall("submit_code", json.dumps({"code": codes[asked]}))

    logs = tmp_path / "logs"
    with chat_endpoint(answer) as (url, seen):
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("inspect")),
                "eval",
                "pipeline/inspect_task.py@netgauge",
                *("-T", "app=malt", "-T", "queries=2"),
                *("-T", f"data_dir={data}", "--epochs", "2"),
                *("--model", "openai/fake-model", "--model-base-url", url),
                *("-M", "responses_api=false", "--log-dir", str(logs), "--display", "plain"),
            ],
            cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": "none"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(seen) == 8 and all(b["model"] == "fake-model" for b in seen)
    assert all(
        {t["function"]["name"] for t in b["tools"]} == {"submit_code", "run_code"} for b in seen
    )
    [location] = [info.name for info in list_eval_logs(str(logs))]
    log = read_eval_log(location, resolve_attachments=True)
    assert log.status == "success" and log.eval.task == "netgauge_malt"
    by_id = {s.id: s for s in log.samples}
    assert sorted(by_id) == sorted([first.query_id, second.query_id])
    good, bad = by_id[first.query_id].scores["netgauge"], by_id[second.query_id].scores["netgauge"]
    assert good.value == {"correct": 1.0, "safe": 1.0, "score": 1.0}
    assert bad.value["correct"] == 0.0 and bad.explanation.startswith("wrong")
    # Inspect recorded both model calls the agent made, the second after the diagnostic
    events = [e for e in by_id[first.query_id].events if e.event == "model"]
    assert len(events) == 2 and first.prompt in events[0].input[1].text
    assert "Observation (run_code)" in events[1].input[-1].text
    means = {s.name: s.metrics for s in log.results.scores}
    assert means["correct"]["accuracy"].value == 0.5

    imported = tmp_path / "imported"
    assert main(["--data-dir", str(imported), "import-inspect", location]) == 0
    assert "model=openai--fake-model/agent=react_tools" in capsys.readouterr().out
    rows = (
        connect(imported)
        .sql(
            "SELECT query_id, trial, outcome, correct, model_calls, trial_of = 'base' "
            "FROM episodes ORDER BY query_id, trial"
        )
        .fetchall()
    )
    assert rows == [
        *[(first.query_id, trial, "correct", True, 2, True) for trial in (0, 1)],
        *[(second.query_id, trial, "wrong", False, 2, True) for trial in (0, 1)],
    ]
    purposes = (
        connect(imported)
        .sql("SELECT list(purpose ORDER BY call_index) FROM calls GROUP BY query_id, variant")
        .fetchall()
    )
    assert purposes == [(["act", "diagnostic", "act"],)] * 4
    steps = connect(imported).sql("SELECT count(*), bool_and(safe) FROM steps").fetchall()
    assert steps == [(4, True)]
    cells = connect(imported).sql("SELECT model, split, variant_label FROM cells ORDER BY 3")
    assert cells.fetchall() == [
        ("openai--fake-model", "test", "as configured"),
        ("openai--fake-model", "test", "trial=1"),
    ]
