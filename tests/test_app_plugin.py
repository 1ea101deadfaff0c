"""An app declares itself: a toy app made of one folder and one config file, outside the
project, runs a cell through `pipeline.run` (and through the Snakemake DAG, beside the
installed toy app, in test_app_entry_point.py: one sweep for both ways of adding an app).

The folder is found through $NETGAUGE_APP_PATH; nothing in the project is edited. The
grid the DAG sweeps is the experiment's choice, not part of the app, so the test writes
one next to the app's config.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import registry
from pipeline.config import ROOT, choices, compose
from pipeline.errors import RegistryError

TOY_INIT = '''
"""Toy: say the number the query names."""

from pipeline.api import AppSpec

APP = AppSpec(
    kind="toy", app=".app:ToyApp", config=".app:ToyConfig", version="1", levels=(1, 2, 3)
)
'''

TOY_APP = """
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from pipeline.api import (
    Capacity, ConfigError, KeyTracker, Outcome, Query, StepResult, StepStatus, Verdict,
    query_id, query_key, query_rng, stamp,
)


@dataclass
class ToyConfig:
    name: str = "toy"
    kind: str = "toy"
    max_turns: int = 2
    top: int = 100

    def validate(self) -> None:
        if self.top < 10:
            raise ConfigError(f"app.top must be >= 10, got {self.top}")


class ToyFormat:
    instructions = "a number"
    example = "42"

    def check(self, reply: str) -> str | None:
        return None if reply.strip().isdigit() else "not a number"


class _Episode:
    def __init__(self, query: Query, max_turns: int) -> None:
        self.query, self.max_turns = query, max_turns

    def observe(self) -> str:
        return self.query.prompt

    def step(self, reply: str) -> StepResult:
        text = reply.strip()
        if not text.isdigit():
            return StepResult("", StepStatus.PARSE_ERROR, "a number, please", error="no number")
        return StepResult(text, StepStatus.OK, "noted", {"said": int(text)}, done=True)


class _Env:
    def __init__(self, cfg: ToyConfig) -> None:
        self.cfg = cfg

    def __enter__(self) -> _Env:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextlib.contextmanager
    def episode(self, query: Query):
        yield _Episode(query, self.cfg.max_turns)


class ToyApp:
    reply_format = ToyFormat()
    few_shot = [("Say 3.", "3")]

    def __init__(self, cfg: ToyConfig, cache_dir, shared) -> None:
        self.cfg, self.name = cfg, cfg.name

    def generate(self, level: int, seed: int, count: int, *, allow_repeats: bool = False):
        keys = KeyTracker(self.name, level, seed, allow_repeats=allow_repeats)
        for index in range(count):
            rng = query_rng(seed, level, index)

            def draw() -> tuple[str, int]:
                n = rng.randrange(self.cfg.top * level)
                return query_key(n), n  # what the agent is asked: the number

            def build(n: int) -> Query | str:
                if n % 10 == 0:
                    return "a round number"
                return Query(query_id(self.name, level, seed, index), self.name, level, seed,
                             index, f"Say {n}.", "number", "say", {"n": n})

            taken = keys.take(index, draw, build, max_draws=20)
            yield stamp(taken.value, taken)

    def capacity(self, level: int) -> Capacity:
        return Capacity(self.cfg.top * level, {"say": self.cfg.top * level}, True, None)

    def environment(self) -> _Env:
        return _Env(self.cfg)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        return str(query.ground_truth["n"])

    def score(self, query: Query, steps) -> Verdict:
        last = steps[-1]
        safe = [True] * len(steps)
        if last.status is not StepStatus.OK:
            return Verdict(Outcome(last.status.value), False, True, safe, last.error)
        ok = last.evidence["said"] == query.ground_truth["n"]
        return Verdict(Outcome.CORRECT if ok else Outcome.WRONG, ok, True, safe)
"""

TOY_CONFIG = """\
# A toy app: say the number the query names.
name: toy       # cell key (equals this file's stem)
kind: toy       # the app: toy/ declares it
max_turns: 2    # replies per query
top: 50         # numbers are drawn below top x level
"""

TOY_GRID = """\
name: toygrid
apps: [toy]              # the toy app only
agents: [oracle, "null"] # reference agents
models: [none]           # no model
levels: [1, 2]           # two levels
seeds: [0]               # one seed
queries: 4               # queries per cell
"""


@pytest.fixture
def toy_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the toy app's package and its one config file (plus a grid)."""
    plugins = tmp_path / "plugins"
    (plugins / "toy").mkdir(parents=True)
    (plugins / "toy" / "__init__.py").write_text(TOY_INIT)
    (plugins / "toy" / "app.py").write_text(TOY_APP)
    (plugins / "conf" / "app").mkdir(parents=True)
    (plugins / "conf" / "app" / "toy.yaml").write_text(TOY_CONFIG)
    (plugins / "conf" / "grid").mkdir(parents=True)
    (plugins / "conf" / "grid" / "toygrid.yaml").write_text(TOY_GRID)
    monkeypatch.setenv(registry.APP_PATH_ENV, str(plugins))
    registry.APPS.refresh()
    yield plugins
    monkeypatch.delenv(registry.APP_PATH_ENV)
    registry.APPS.refresh()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_the_toy_app_is_found_and_checked(toy_path: Path) -> None:
    assert "toy" in registry.APPS.names()
    assert "toy" in choices("app") and "toygrid" in choices("grid")
    cfg = compose(["app=toy"])
    assert cfg.app.top == 50
    with pytest.raises(Exception, match=r"app.top must be >= 10"):
        compose(["app=toy", "app.top=3"])


def test_the_toy_app_runs_through_pipeline_run(toy_path: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "pipeline.run", "app=toy", "agent=oracle", "level=2"]
    done = subprocess.run(
        [*argv, "queries=5", f"data_dir={data}"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    part = "app=toy/model=none/agent=oracle/level=2/seed=0/queries=5/variant=base"
    assert f"{part}: n=5 correct=100.0%" in done.stdout
    queries = pq.read_table(
        data / "results/queries/app=toy/app_variant=base/level=2/seed=0/part-0.parquet"
    ).to_pydict()
    assert queries["query_id"] == [f"toy-L2-s0-{i:05d}" for i in range(5)]


def test_two_packages_declaring_one_kind_are_an_error(toy_path: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twins"
    (twin / "toy2").mkdir(parents=True)
    (twin / "toy2" / "__init__.py").write_text(TOY_INIT)
    os.environ[registry.APP_PATH_ENV] = f"{toy_path}{os.pathsep}{twin}"
    registry.APPS.refresh()
    with pytest.raises(RegistryError, match=r"app kind 'toy' is declared twice: in .*toy and in"):
        registry.APPS.names()


def test_an_override_puts_the_previous_entry_back() -> None:
    before = registry.APPS.get("routing")
    fake = registry.AppSpec(
        "routing", "tests.fakes:EchoApp", "tests.fakes:EchoConfig", "9", levels=(1, 2, 3)
    )
    with registry.APPS.override("routing", fake):
        assert registry.APPS.get("routing") is fake
    assert registry.APPS.get("routing") is before
    with registry.APPS.override("brand_new", fake):
        assert "brand_new" in registry.APPS.names()
    assert "brand_new" not in registry.APPS.names()
