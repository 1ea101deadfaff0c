"""MALT levels 4 and 5 end to end: through the Snakemake DAG (a small grid), and 200
queries per level of malt and malt_google played through the real sandbox (slow).

Validation as for every level: each query's oracle program reproduces a right plan (the
generator checks it), the oracle agent's reply played in the sandbox is correct and safe,
the null agent is never correct, and the keys are distinct.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from generators.malt.app import MaltApp
from generators.malt.config import MaltConfig, TopologyConfig
from pipeline.config import ROOT
from pipeline.views import connect
from tests.conftest import SHARED_DATA, SLOTS, SNAKEMAKE, require

pytestmark = pytest.mark.integration
GOOGLE = SHARED_DATA / "malt" / "malt-example-final.textproto"


def require_google() -> None:
    require(GOOGLE.exists(), f"Google's MALT example is not in {GOOGLE.parent}")


def test_levels_4_and_5_through_the_dag(tmp_path: Path) -> None:
    require_google()
    data = tmp_path / "data"
    config = ["grid=smoke", "apps=[malt,malt_google]", "levels=[4,5]", "queries=8"]
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "summarize", "--config", *config, f"data_dir={data}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = (
        connect(data)
        .execute(
            "SELECT app, level, agent, count(*), count(DISTINCT query_key), "
            "count(*) FILTER (WHERE correct), count(*) FILTER (WHERE safe), "
            "min(answer_type), count(DISTINCT operation) "
            "FROM episodes GROUP BY ALL ORDER BY ALL"
        )
        .fetchall()
    )
    expected = []
    for app in ("malt", "malt_google"):
        for level in (4, 5):
            expected += [(app, level, "null", 8, 8, 0, 8), (app, level, "oracle", 8, 8, 8, 8)]
    assert [row[:7] for row in rows] == expected
    assert {row[7] for row in rows} == {"plan"} and all(row[8] >= 2 for row in rows)


def play(app: MaltApp, level: int, count: int) -> tuple[int, int, int, int]:
    """(queries, distinct keys, oracle correct and safe, null correct) of `count` queries."""
    from generators.malt.app import MaltEpisode  # noqa: F401 - the episode the DAG plays

    queries = list(app.generate(level, 0, count))
    oracle = null = 0
    with app.environment() as env:
        for query in queries:
            with env.episode(query) as episode:
                reply = app.oracle_reply(query, 1, episode.observe())
                verdict = app.score(query, [episode.step(reply)])
                oracle += verdict.correct and verdict.safe
            with env.episode(query) as episode:
                null += app.score(query, [episode.step("")]).correct
    return len(queries), len({q.key for q in queries}), oracle, null


@pytest.mark.slow
@pytest.mark.parametrize("source", ["synthetic", "file"])
def test_100_queries_per_new_level_are_valid_through_the_sandbox(tmp_path, source) -> None:
    # 100 per level and topology in CI; `python -m pipeline.bench --only malt_plans` runs more.
    if source == "file":
        require_google()
    cfg = MaltConfig(name=f"malt-{source}", topology=TopologyConfig(source=source))
    app = MaltApp(cfg, tmp_path / "cache", SHARED_DATA)
    for level in (4, 5):
        assert play(app, level, 100) == (100, 100, 100, 0), (source, level)
