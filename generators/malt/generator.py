"""Seeded, validated generation of MALT queries on one base topology.

Query i of (topology, level, seed) is drawn with `random.Random(f"{seed}:{level}:{i}")`
alone, so a set of n queries is a prefix of any larger set with the same arguments.
Every query is validated before it is returned:
  1. the analytic answer (actions.evaluate on a View) is computed;
  2. null-like answers (None, 0, "", [], {}, the unchanged graph) are rejected;
  3. the intended graph (base+diff of every change the task makes, also when the answer
     is a value) must be safe by the scorer's own rule (intended.judge);
  4. the oracle program, exec'd in-process on the base graph (then restored), must
     return an answer that scores as equal to the analytic one and leave the intended
     graph (so the ground truth always scores correct and safe).
Draws failing 1-3 are redrawn (at most MAX_DRAWS times); a failure of 4 is a bug and
raises at once.

Capacity plans (levels 4 and 5) have many right answers, so steps 3 and 4 hold both the
analytic plan (plansolve.py) and the oracle program's plan to the plan checker
(plancheck.py: inside the task's scope, structurally valid, every invariant and optimum)
instead of to each other. The coupled-constraint plans of levels 6-8 are checked the same
way, and step 2 also rejects a draw whose exact search is too large or on which some
greedy rule reaches the optimum (coupledplan.py); as most draws are, a query of these
levels keeps the template it drew first through its redraws (so weights and the uniform
mix hold for what is kept) unless the stratum cap below turns it to another, and may
redraw up to CAP_DRAWS times per template of the level and COUPLED_DRAWS more. A coupled
draw whose variety stratum (operation x size x the block or blocks it sits in) already
holds max(4, 1 + floor(0.095 i)) of the seed's queries 0..i-1 is drawn again before any
validation: CAP_DRAWS draws of the template it picked, then (app version 6) CAP_DRAWS of
each other template of the level in turn, and only then the picked one without the cap (a
small topology may hold a template's tasks in a few blocks only): the greedy filter keeps
far more draws in some blocks than in others (on the small topology a quarter of level 6
drained one block, and its drains that defeat every rule lie in a few blocks). A query
that finds its template's draw within its first CAP_DRAWS draws is what version 5 drew
(version 5 drew 1,000 of the picked one under the cap, then 1,000 without). Query i still
depends only on its stream and the queries before it.

What is drawn: without `weights` and `operations`, exactly what every earlier version
drew. `operations` (app.operations) keeps the draws whose label it selects; `weights`
(failure-driven sampling) first draws the label with `pipeline.querygen.weighted_choice`
over the labels the level holds on this topology (its capacity's operations), then a
spec of that label. Levels 4 and 5 draw their template first in every case.

A query's key is its spec on its topology (`spec_key`): the prompt is rendered from the
spec alone, so equal keys are equal tasks. A spec whose key another seed slot owns, or an
earlier query of the seed took, is redrawn before any validation (pipeline/querygen.py).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from generators.malt import (
    APP,
    APP_VERSION,
    coupledoracle,
    coupledplan,
    coupledrender,
    coupledspec,
    plancheck,
    planoracle,
    planrender,
    plansolve,
)
from generators.malt.actions import Spec, expected_record, operation_label
from generators.malt.checker import SafetyChecker
from generators.malt.config import size_class
from generators.malt.index import Redraw, TopoIndex, View
from generators.malt.inprocess import InProcessRunner
from generators.malt.intended import judge
from generators.malt.levels import COUPLED_LEVELS, PLAN_LEVELS, Drawer, spec_key
from generators.malt.measure import measure
from generators.malt.operations import selects
from generators.malt.oracle import ORACLE_PRELUDE, program
from generators.malt.planbase import Base
from generators.malt.plandraw import PlanDrawer
from generators.malt.prompt import build_prompt
from generators.malt.render import Renderer
from generators.malt.scoring import answers_match, canonical_diff
from pipeline.api import (
    ConfigError,
    KeyTracker,
    Query,
    QueryGenerationError,
    canonical_json,
    query_id,
    query_rng,
    share_cap,
    stamp,
    weighted_choice,
)

LEVELS = APP.levels
MAX_DRAWS = 100
COUPLED_DRAWS = 2_000  # most coupled draws fail the greedy filter (README: the shares)
STRATUM_SHARE = 0.095  # the bound is 10 % of a run
STRATUM_MIN = 4  # the first queries of a run: a template has only 6 blocks on `small`
# Draws of each template under the cap, in turn; then COUPLED_DRAWS without it. Version 5
# drew 1,000 of the picked one: on default topologies a query needs at most ~70 draws.
CAP_DRAWS = 250
SELECT_DRAWS = 5_000  # draws of levels 1-3 searched for a selected or weighted label


def fallbacks(picked: str, templates: Sequence[str]) -> list[str]:
    """The templates a coupled query draws under the stratum cap, in turn: the one it
    picked, then the level's others in their order."""
    return [picked, *(t for t in templates if t != picked)]


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
        capacity: Callable[[int], object] | None = None,
        operations: Sequence[str] | None = None,
        limits: str = "",
    ) -> None:
        self.graph = graph
        self.limits = limits  # prompt.limits_text of the sandbox the agent's code runs in
        self._capacity = capacity
        self.operations = list(operations) if operations is not None else None
        self.size = size_class(graph.number_of_nodes())
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
        self.plans = PlanDrawer(self.index, self.operations)
        self.renderer = Renderer(lambda name: self.index.kinds.get(name))
        self.runner = InProcessRunner(graph, ORACLE_PRELUDE)
        self.plan_runner = InProcessRunner(graph, planoracle.PLAN_PRELUDE)
        self.coupled_runner = InProcessRunner(graph, coupledoracle.COUPLED_PRELUDE)
        self._labels: dict[int, list[str]] = {}

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be a non-negative int, got {count!r}")
        if count and (weights is not None or self.operations is not None):
            self.labels(level)  # fails before any draw when nothing can be drawn
        tracker = self.tracker(level, seed, allow_repeats)
        strata: Counter[str] = Counter()
        for i in range(count):
            query = self.query(level, seed, i, tracker, weights, strata)
            strata[query.stratum] += 1
            yield query

    def raw_draw(self, level: int, rng: random.Random) -> dict[str, Any]:
        """A spec of `level` as the level draws it (templates of 4 and 5 as selected)."""
        if level in PLAN_LEVELS:
            return self.plans.draw(level, rng)
        return self.drawer.draw(level, rng)

    def labels(self, level: int) -> list[str]:
        """The operation labels `level` draws on this topology, as `operations` selects
        them: its templates (4, 5), else the labels its capacity found valid (1-3)."""
        found = self._labels.get(level)
        if found is None:
            if level in PLAN_LEVELS:
                found = list(self.plans.templates[level])
            else:
                by_op = self._measured(level).by_operation
                found = sorted(op for op, n in by_op.items() if n and selects(self.operations, op))
            if not found:
                raise ConfigError(
                    f"app.operations={self.operations} selects no operation of {self.app_name} "
                    f"level {level} on topology {self.topology_id}"
                )
            self._labels[level] = found
        return found

    def _measured(self, level: int) -> Any:
        if self._capacity is not None:
            return self._capacity(level)
        return measure(self, level, draws=4_000, validate=400)

    def draw_spec(
        self, level: int, rng: random.Random, weights: Mapping[str, float] | None = None
    ) -> dict[str, Any]:
        """A spec of `level` drawn as the module docstring says."""
        if level in PLAN_LEVELS:
            return self.plans.draw(level, rng, weights)
        if weights is None and self.operations is None:
            return self.drawer.draw(level, rng)
        wanted = weighted_choice(rng, self.labels(level), weights) if weights is not None else None
        for _ in range(SELECT_DRAWS):
            try:
                spec = self.drawer.draw(level, rng)
            except Redraw:
                continue
            label = operation_label(spec)
            if label == wanted if wanted is not None else selects(self.operations, label):
                return spec
        raise Redraw(f"no draw of {wanted or self.operations} in {SELECT_DRAWS} tries")

    def tracker(self, level: int, seed: int, allow_repeats: bool = False) -> KeyTracker:
        capacity = self._capacity
        return KeyTracker(
            self.app_name,
            level,
            seed,
            allow_repeats=allow_repeats,
            capacity=(lambda: capacity(level)) if capacity is not None else None,
        )

    def check(self, drawn: Spec) -> tuple[dict[str, Any], dict[str, list]] | str:
        """Checks 1-3 of the module docstring: (answer record, intended diff: the changes
        the whole task makes), or why the spec is rejected."""
        spec = drawn.body
        if drawn.answer_type == "plan":
            return self._check_plan(spec)
        try:
            view = View(self.index)
            record = expected_record(spec, view)
        except Redraw as exc:
            return str(exc).split(":")[0][:60]
        if is_null_like(record):
            return "null-like answer"
        if not self._first_step_matters(drawn, record):
            return "the first step does not change the answer"
        changes = record["diff"] if record["type"] == "graph" else view.diff()
        if not graphdiff.is_empty(changes) and judge(self.checker, changes, changes):
            return "unsafe ground truth"
        return record, changes

    def _check_plan(self, spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list]] | str:
        """Checks 1-3 for a plan: the analytic plan exists, changes the graph, and is a right
        plan by the checker's own rule (a wrong one is a bug, never a redraw)."""
        if coupledplan.is_coupled(spec):
            why = coupledplan.rejected(spec, plancheck.base_of(self.checker))
            if why is not None:
                return why[:60]
        view = View(self.index)
        try:
            plansolve.solve(spec, view)
        except Redraw as exc:
            return str(exc).split(":")[0][:60]
        changes = view.diff()
        if graphdiff.is_empty(changes):
            return "null-like answer"
        wrong = plancheck.errors(self.checker, spec, changes)
        if wrong:
            raise QueryGenerationError(
                f"the analytic plan breaks the plan checker on topology {self.topology_id}: "
                f"{wrong[0]}; spec={canonical_json(spec)}"
            )
        return {"type": "graph", "graph_class": "DiGraph", "diff": changes}, changes

    def query(
        self,
        level: int,
        seed: int,
        index: int,
        tracker: KeyTracker | None = None,
        weights: Mapping[str, float] | None = None,
        strata: Counter[str] | None = None,
    ) -> Query:
        """Query `index` of (level, seed) on this topology, given the keys earlier queries
        of the seed took (`tracker`; a fresh one for index 0) and their strata (`strata`)."""
        tracker = tracker or self.tracker(level, seed)
        strata = strata if strata is not None else Counter()
        cap = share_cap(index, STRATUM_SHARE, STRATUM_MIN)
        draws = [0]  # of this query
        rng = query_rng(seed, level, index)
        picked = self.plans.pick(level, rng, weights) if level in COUPLED_LEVELS else None
        # Under the cap: the picked template, then each other one of the level in turn
        # (CAP_DRAWS draws each), then the picked one without the cap.
        # A template weighted 0 (focus.results) is never turned to.
        phases = []
        if picked is not None:
            turns = [t for t in self.plans.templates[level] if not weights or weights.get(t, 1) > 0]
            phases = fallbacks(picked, turns)

        def draw() -> tuple[str, Spec] | str:
            draws[0] += 1
            phase = (draws[0] - 1) // CAP_DRAWS
            capped = picked is not None and phase < len(phases)
            template = phases[phase] if capped else picked
            # Under the cap a one-block task is drawn among the blocks whose stratum has
            # room (the rare ones get every draw), so rng is used as before while none is full.
            prefix = f"{template}/{self.size}/"
            full = [
                w[len(prefix) :] for w, n in strata.items() if n >= cap and w.startswith(prefix)
            ]
            self.plans.coupled.full = frozenset(full if capped else ())
            try:
                if template is not None:
                    spec = self.plans.draw_named(template, rng)
                else:
                    spec = self.draw_spec(level, rng, weights)
            except Redraw as exc:
                return str(exc).split(":")[0][:60]
            finally:
                self.plans.coupled.full = frozenset()
            drawn = Spec.of(spec)
            if capped:
                where = coupledspec.stratum(drawn.operation, self.size, spec)
                if strata[where] >= cap:
                    return f"stratum {where} holds {cap} queries already"
            return spec_key(self.topology_id, spec), drawn

        def build(drawn: Spec) -> Query | str:
            checked = self.check(drawn)
            if isinstance(checked, str):
                return checked
            record, changes = checked
            qid = query_id(self.app_name, level, seed, index)
            return self._finish(drawn, record, changes, qid, level, seed, index)

        taken = tracker.take(
            index,
            draw,
            build,
            max_draws=CAP_DRAWS * len(phases) + COUPLED_DRAWS if phases else MAX_DRAWS,
            hint=f"On topology {self.topology_id}, which may be too small for level {level}: "
            "raise app.topology size knobs",
        )
        return stamp(taken.value, taken)

    def _first_step_matters(self, drawn: Spec, record: dict[str, Any]) -> bool:
        """In a sequence ending in a question, the earlier change must change the answer."""
        if drawn.body["op"] != "seq" or record["type"] == "graph":
            return True
        try:
            alone = expected_record(drawn.body["steps"][-1], View(self.index))
        except Redraw:
            return True  # the question needs what the first step added
        return answers_match(drawn.answer_type, alone, record) is not None

    def _finish(
        self,
        drawn: Spec,
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
        spec, kind = drawn.body, drawn.answer_type
        coupled = coupledplan.is_coupled(spec)
        if kind == "plan":
            code, truth = self._plan_truth(spec, record, query_id)
            render = coupledrender if coupled else planrender
            task = render.task(spec, self.renderer.ref)
        else:
            code = program(spec)
            got = self.runner.run(code, expected=changes)
            reason = answers_match(kind, record, got)
            if reason is None and kind != "graph":
                left = got.get("state") or graphdiff.empty_diff()
                if canonical_diff(left) != canonical_diff(changes):
                    reason = "the graph the oracle leaves differs from the intended graph"
            if reason is not None:
                raise QueryGenerationError(
                    f"oracle program and analytic answer disagree on {query_id} "
                    f"(topology {self.topology_id}): {reason}; spec={canonical_json(spec)}"
                )
            # A question's intended graph (a change's is its answer): intended.py
            truth = {} if kind == "graph" else {"state": changes}
            task = self.renderer.task(spec)
        return Query(
            query_id=query_id,
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=build_prompt(task, self.limits),
            answer_type=kind,
            operation=drawn.operation,
            ground_truth={
                "spec": spec,
                "answer": record,
                **truth,
                "oracle_code": code,
                "topology_id": self.topology_id,
                "app_version": APP_VERSION,
            },
            env_key=self.topology_id,
            size=self.size,
            # Levels 6-8 declare their variety strata (levels 1-5 stay as they were).
            stratum=coupledspec.stratum(drawn.operation, self.size, spec) if coupled else "",
        )

    def _plan_truth(
        self, spec: dict[str, Any], record: dict[str, Any], query_id: str
    ) -> tuple[str, dict[str, Any]]:
        """The oracle program of a plan, run and held to the plan checker, and what the
        ground truth holds besides the analytic plan: the limits the checker applies."""
        if coupledplan.is_coupled(spec):
            code = coupledoracle.program(spec)
            got = self.coupled_runner.run(code, expected=record["diff"])
        else:
            code = planoracle.program(spec)
            got = self.plan_runner.run(code, expected=record["diff"])
        wrong = (
            [f"it returned a {got.get('type')} answer"]
            if got.get("type") != "graph"
            else plancheck.errors(self.checker, spec, got["diff"])
        )
        if wrong:
            raise QueryGenerationError(
                f"the oracle program's plan breaks the plan checker on {query_id} (topology "
                f"{self.topology_id}): {wrong[0]}; spec={canonical_json(spec)}"
            )
        return code, {"bounds": plancheck.bounds(Base(self.graph), spec)}
