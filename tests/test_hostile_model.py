"""Hostile model output through the real LLM-agent path: an OpenAI-compatible endpoint of
our own streams replies holding lone surrogates, NUL bytes, malformed graph answers and
oversized text; the real MALT app, sandbox, scorer and Parquet writer take them. Every
episode ends with a typed outcome, the cell finishes, and a rerun redoes nothing."""

from __future__ import annotations

import pytest

from pipeline.config import compose
from pipeline.run import run_cell
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint

pytestmark = pytest.mark.integration

FENCE = "```"
REPLIES = [
    f"{FENCE}python\ndef process_graph(graph):\n    return 'lone \ud800 surrogate'\n{FENCE}",
    f"{FENCE}python\ndef process_graph(graph):\n    return 'a\x00b'\n{FENCE}",
    f"{FENCE}python\ndef process_graph(graph):\n    return {{'\ud83d': 1, 'x\x00': [2]}}\n{FENCE}",
    (
        f"{FENCE}python\ndef process_graph(graph):\n    node = next(iter(graph.nodes))\n"
        f"    graph.nodes[node]['type'] = [['EK_PORT'], {{}}]\n    return graph\n{FENCE}"
    ),
    f"{FENCE}python\ndef process_graph(graph):\n    raise ValueError('\ud800\x00')\n{FENCE}",
    "\ud800\x00 no code here, only \udfff junk \x00" * 3,
    "x" * (2 << 20),  # over the 1 Mi characters any app reads
    f"{FENCE}python\n" + "1+" * 200_000 + "1\n" + FENCE,  # past the compiler's limits
]
TYPED = {
    "correct", "wrong", "parse_error", "exec_error", "timeout", "resource_limit", "blocked",
    "context_overflow",
}  # fmt: skip


def _per_task() -> object:
    """REPLIES[i] for every call about the i-th task asked (the first user message; the
    cell plays its queries in order), so each hostile reply meets one query, its
    re-prompts included."""
    tasks: dict[str, int] = {}

    def answer(body: dict) -> str:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return REPLIES[tasks.setdefault(task, len(tasks)) % len(REPLIES)]

    return answer


@pytest.fixture
def endpoint():
    with chat_endpoint(_per_task()) as (url, _):
        yield url


def test_hostile_model_output_finishes_its_cell_with_typed_outcomes(tmp_path, endpoint):
    overrides = [
        "app=malt",
        "agent=zero_shot",
        "model=smollm2",
        "model.endpoint=external",
        f"model.base_url={endpoint}",
        "model.max_in_flight=1",
        "app.max_turns=2",
        "queries=8",
        f"data_dir={tmp_path}",
    ]
    run_cell(compose(overrides))
    con = connect(tmp_path)
    outcomes = con.execute("SELECT outcome, count(*) FROM episodes GROUP BY ALL").fetchall()
    assert sum(n for _, n in outcomes) == 8
    assert {o for o, _ in outcomes} <= TYPED, outcomes  # no env_error, no score_error
    got = dict(
        con.execute("SELECT query_id[-1:]::INT, outcome FROM episodes").fetchall()
    )  # query i met REPLIES[i]
    assert got == {
        0: "exec_error",  # a lone surrogate in the source: it cannot be compiled
        1: "exec_error",  # a NUL in the source: likewise
        2: "exec_error",
        3: "wrong",  # a malformed graph answer: judged, not a crashed checker
        4: "exec_error",
        5: "parse_error",  # no code at all
        # More than any app reads, and past the compiler's limits: unusable, and the
        # second turn's request (that reply in its history) is past the model's context.
        6: "context_overflow",
        7: "context_overflow",
    }
    # The hostile text was stored, made storable: lone surrogates escaped, NULs kept.
    replies = [r for (r,) in con.execute("SELECT reply FROM steps").fetchall()]
    assert any("\\ud800" in r for r in replies) and any("\x00" in r for r in replies)
    assert all(len(r) < (1 << 20) + 200 for r in replies)  # the oversized reply, cut
    calls = con.execute("SELECT count(*), sum(completion_tokens) FROM calls").fetchone()
    assert calls[0] >= 8 and calls[1] == 7 * calls[0]
    shards = {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.parquet")}
    run_cell(compose(overrides))  # the same cell again: nothing to redo
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.parquet")} == shards
