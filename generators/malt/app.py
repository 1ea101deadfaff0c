"""`MaltApp`: the MALT capacity-planning app behind pipeline.core.App.

One environment = one loaded topology and one GraphSandbox for it; an episode runs the
agent's `process_graph(graph)` in that sandbox (never in this process) and records the
answer record (and, for a value answer whose code changed the graph, that change as
`state`) as step evidence for `score`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from types import TracebackType
from typing import Any

import networkx as nx

from emulators.pysandbox.limits import SandboxLimits
from emulators.pysandbox.sandbox import GraphSandbox
from generators.malt import scoring
from generators.malt.capacity import cached_measure
from generators.malt.config import MaltConfig, effective_topology, validate_config
from generators.malt.generator import MaltQueryGenerator
from generators.malt.prompt import limits_text
from generators.malt.replies import (
    FEW_SHOT,
    MAX_SHOWN,
    NO_CODE,
    RUN_CODE,
    MaltReplyFormat,
    extract_code,
)
from generators.malt.topology import load_topology
from pipeline.api import (
    Capacity,
    DataError,
    EnvironmentFailure,
    Query,
    StepResult,
    StepStatus,
    Verdict,
)


def _limits(value: Any) -> SandboxLimits:
    """A SandboxLimits instance from a dataclass or an OmegaConf node of the same keys."""
    if isinstance(value, SandboxLimits):
        return value
    return SandboxLimits(**{f.name: getattr(value, f.name) for f in fields(SandboxLimits)})


class MaltEpisode:
    """One query played in the environment's sandbox. `diagnose("run_code", {"code": …})`
    runs code as a step would, on a fresh copy of the graph, and only shows the result."""

    def __init__(self, query: Query, sandbox: Any, max_turns: int) -> None:
        self.query = query
        self.max_turns = max_turns
        self._sandbox = sandbox
        self._turn = 0

    def observe(self) -> str:
        return self.query.prompt

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        if name != RUN_CODE.name:
            return f"there is no diagnostic '{name}'; the one there is: {RUN_CODE.name}(code)"
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return "run_code needs a 'code' string defining process_graph(graph)"
        code = extract_code(code) or code
        result = self._sandbox.run(code)
        if result.status is not StepStatus.OK:
            shown = f"{result.status}: {result.error}\n{result.stdout}"
        else:
            value = json.dumps(result.value, ensure_ascii=False, default=str)
            shown = f"printed:\n{result.stdout}\nreturned: {value}"
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + f"\n[... {len(shown) - MAX_SHOWN} more characters]"
        return shown

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        last_turn = self._turn >= self.max_turns
        code = extract_code(reply)
        if code is None:
            return StepResult("", StepStatus.PARSE_ERROR, NO_CODE, done=last_turn, error=NO_CODE)
        result = self._sandbox.run(code)
        evidence: dict[str, Any] = {}
        if result.status is StepStatus.OK:
            evidence["answer"] = result.value
            if result.state is not None:  # the graph the code left, judged with the answer
                evidence["state"] = result.state
            output = result.stdout
        else:
            output = "\n".join(part for part in (result.error, result.stdout) if part)
        if result.blocked:
            evidence["blocked"] = list(result.blocked)
        return StepResult(
            action=code,
            status=result.status,
            output=output,
            evidence=evidence,
            # An answer ends the episode; a failed run may be retried while turns remain.
            done=result.status is StepStatus.OK or last_turn,
            error=result.error,
            exec_s=result.exec_s,
        )


class MaltEnvironment:
    """The loaded topology and one sandbox process for it, from enter to exit."""

    def __init__(self, app: MaltApp) -> None:
        self._app = app
        self._sandbox: Any = None
        self.topology_id: str | None = None

    def __enter__(self) -> MaltEnvironment:
        cfg = self._app.cfg
        graph, self.topology_id = load_topology(
            effective_topology(cfg), self._app.cache_dir, self._app.shared_data_dir
        )
        self._sandbox = GraphSandbox(graph, _limits(cfg.sandbox))
        self._sandbox.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()

    @contextmanager
    def episode(self, query: Query) -> Iterator[MaltEpisode]:
        if self._sandbox is None:
            raise EnvironmentFailure("MaltEnvironment.episode() called outside its `with` block")
        if query.env_key != self.topology_id:
            raise DataError(
                f"query {query.query_id} was generated on topology {query.env_key!r}, but this "
                f"environment holds {self.topology_id!r}; regenerate the queries or set "
                "app.topology to the generating config"
            )
        yield MaltEpisode(query, self._sandbox, self._app.cfg.max_turns)


class MaltApp:
    """Generator, environment, oracle and scorer of the MALT app, versioned together."""

    reply_format = MaltReplyFormat()
    few_shot = FEW_SHOT

    def __init__(
        self, cfg: MaltConfig, cache_dir: Path, shared_data_dir: Path | None = None
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.name = cfg.name  # a variant (e.g. malt_google) keeps its own ids and rows
        self.cache_dir = Path(cache_dir)
        self.shared_data_dir = Path(shared_data_dir) if shared_data_dir is not None else None
        self._generator: MaltQueryGenerator | None = None

    def _prepared(self) -> MaltQueryGenerator:
        """The topology with its indices and checker, loaded once; generation and scoring
        both apply changes to this graph and revert them, never copy it."""
        if self._generator is None:
            graph, topology_id = load_topology(
                effective_topology(self.cfg), self.cache_dir, self.shared_data_dir
            )
            lim = _limits(self.cfg.sandbox)
            self._generator = MaltQueryGenerator(
                graph,
                topology_id,
                app_name=self.name,
                capacity=self.capacity,
                operations=self.cfg.operations,
                limits=limits_text(lim.cpu_time_s, lim.wall_timeout_s, lim.memory_mb),
            )
        return self._generator

    def topology(self) -> tuple[nx.DiGraph, str]:
        prepared = self._prepared()
        return prepared.graph, prepared.topology_id

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        """Queries 0..count-1 of (level, seed); `weights` (operation label -> weight, from
        failure-driven sampling) draws labels by weight instead of as the level does."""
        return self._prepared().generate(
            level, seed, count, allow_repeats=allow_repeats, weights=weights
        )

    def capacity(self, level: int) -> Capacity:
        """Distinct queries of `level` on this topology (generators/malt/capacity.py), of
        the operations `app.operations` selects, measured once and cached."""
        return cached_measure(self._prepared(), level, self.cache_dir)

    def environment(self) -> MaltEnvironment:
        return MaltEnvironment(self)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        return f"```python\n{query.ground_truth['oracle_code']}```\n"

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        prepared = self._prepared()
        if query.env_key != prepared.topology_id:
            raise DataError(
                f"query {query.query_id} was generated on topology {query.env_key!r}, but "
                f"app.topology gives {prepared.topology_id!r}; score with the generating config"
            )
        return scoring.score(query, steps, prepared.checker)
