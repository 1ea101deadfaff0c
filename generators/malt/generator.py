"""Seeded, validated generation of MALT queries on one base topology.

Query i of (topology, level, seed) is drawn with `random.Random(f"{seed}:{level}:{i}")`
alone, so a set of n queries is a prefix of any larger set with the same arguments.
Every query is validated before it is returned:
  1. the analytic answer (actions.evaluate on a View) is computed;
  2. null-like answers (None, 0, "", [], {}, the unchanged graph) are rejected;
  3. a graph answer must pass the safety checker on base+diff;
  4. the oracle program, exec'd in-process on the base graph (then restored), must
     return an answer that scores as equal to the analytic one.
Draws failing 1-3 are redrawn (at most MAX_DRAWS times); a failure of 4 is a bug and
raises at once.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import networkx as nx

from generators.malt import APP_VERSION
from generators.malt.actions import answer_type, expected_record, operation_label
from generators.malt.checker import SafetyChecker
from generators.malt.index import Redraw, TopoIndex, View
from generators.malt.inprocess import InProcessRunner
from generators.malt.levels import Drawer
from generators.malt.oracle import ORACLE_PRELUDE, program
from generators.malt.prompt import build_prompt
from generators.malt.render import Renderer
from generators.malt.scoring import answers_match
from pipeline.core import Query, canonical_json
from pipeline.errors import ConfigError, QueryGenerationError

LEVELS = (1, 2, 3)
MAX_DRAWS = 100


def is_null_like(record: dict[str, Any]) -> bool:
    """True for answers a do-nothing agent could give: None, 0, "", [], {}, no change."""
    if record["type"] == "graph":
        return not any(record["diff"].values())
    value = record["value"]
    if isinstance(value, str):
        return not value.strip()
    return value is None or value is False or value == 0 or value in ([], {})


class MaltQueryGenerator:
    """Per-topology indices, built once and shared by every query of every level."""

    def __init__(
        self,
        graph: nx.DiGraph,
        topology_id: str,
        checker: SafetyChecker | None = None,
        *,
        app_name: str = "malt",
    ) -> None:
        self.graph = graph
        self.topology_id = topology_id
        self.app_name = app_name
        self.checker = checker or SafetyChecker(graph)
        if not self.checker.base_safe:
            raise QueryGenerationError(
                f"topology {topology_id} fails the safety checker before any change, e.g. "
                f"{self.checker.base_violations[0]}; queries need a safe base"
            )
        self.index = TopoIndex(graph)
        self.drawer = Drawer(self.index)
        self.renderer = Renderer(lambda name: self.index.kinds.get(name))
        self.runner = InProcessRunner(graph, ORACLE_PRELUDE)

    def generate(self, level: int, seed: int, count: int) -> Iterator[Query]:
        if level not in LEVELS:
            raise ConfigError(f"level must be one of {list(LEVELS)}, got {level!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be a non-negative int, got {count!r}")
        for i in range(count):
            yield self.query(level, seed, i)

    def query(self, level: int, seed: int, index: int) -> Query:
        """Query `index` of (level, seed) on this topology."""
        query_id = f"{self.app_name}-L{level}-s{seed}-{index:05d}"
        rng = random.Random(f"{seed}:{level}:{index}")
        reasons: Counter[str] = Counter()
        for _ in range(MAX_DRAWS):
            try:
                spec = self.drawer.draw(level, rng)
                view = View(self.index)
                record = expected_record(spec, view)
            except Redraw as exc:
                reasons[str(exc).split(":")[0][:60]] += 1
                continue
            if is_null_like(record):
                reasons["null-like answer"] += 1
                continue
            if not self._first_step_matters(spec, record):
                reasons["the first step does not change the answer"] += 1
                continue
            if record["type"] == "graph" and self.checker.check_diff(record["diff"]):
                reasons["unsafe ground truth"] += 1
                continue
            changes = record["diff"] if record["type"] == "graph" else view.diff()
            return self._finish(spec, record, changes, query_id, level, seed, index)
        common = ", ".join(f"{r} ({n}x)" for r, n in reasons.most_common(3))
        raise QueryGenerationError(
            f"no valid query {query_id} on topology {self.topology_id} after {MAX_DRAWS} "
            f"draws; most common reasons: {common}. The topology may be too small for "
            "level {level}: raise app.topology size knobs"
        )

    def _first_step_matters(self, spec: dict[str, Any], record: dict[str, Any]) -> bool:
        """In a sequence ending in a question, the earlier change must change the answer."""
        if spec["op"] != "seq" or record["type"] == "graph":
            return True
        try:
            alone = expected_record(spec["steps"][-1], View(self.index))
        except Redraw:
            return True  # the question needs what the first step added
        return answers_match(answer_type(spec), alone, record) is not None

    def _finish(
        self,
        spec: dict[str, Any],
        record: dict[str, Any],
        changes: dict[str, list],
        query_id: str,
        level: int,
        seed: int,
        index: int,
    ) -> Query:
        """Validate the oracle program against the analytic answer and build the Query.
        `changes`: the analytic diff of the whole run (also for questions asked after a
        change), which lets the runner restore the base without a full scan."""
        kind = answer_type(spec)
        code = program(spec)
        got = self.runner.run(code, expected=changes)
        reason = answers_match(kind, record, got)
        if reason is not None:
            raise QueryGenerationError(
                f"oracle program and analytic answer disagree on {query_id} "
                f"(topology {self.topology_id}): {reason}; spec={canonical_json(spec)}"
            )
        return Query(
            query_id=query_id,
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=build_prompt(self.renderer.task(spec)),
            answer_type=kind,
            operation=operation_label(spec),
            ground_truth={
                "spec": spec,
                "answer": record,
                "oracle_code": code,
                "topology_id": self.topology_id,
                "app_version": APP_VERSION,
            },
            env_key=self.topology_id,
        )
