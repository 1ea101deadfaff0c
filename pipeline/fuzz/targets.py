"""The fuzzer's targets: every app at every level, with queries that cost no validation.

Queries come from each app's own draw (the generate stage's seeded draws); the lab apps'
are not validated on a live lab first (validation costs a lab build per query, and a
fuzzed reply needs a network, not a solvable task), so their oracle replies are the
faults' fixes in drawn order. The command corpora (pipeline/fuzz/corpus.py) add what an
operator of each app types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline.core import App, Query
from pipeline.fuzz.corpus import KUBECTL_CORPUS, LAB_CORPUS, VTYSH_CORPUS
from pipeline.fuzz.harness import Target


def _app(name: str, overrides: Sequence[str] = ()) -> App:
    from pipeline.build import make_app
    from pipeline.config import compose

    return make_app(compose([f"app={name}", *overrides]))


def _generated(app: App, levels: Sequence[int], per_level: int, seed: int) -> list[Query]:
    return [q for level in levels for q in app.generate(level, seed, per_level)]


def malt(levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0) -> Target:
    app = _app("malt", ["app.topology.superblocks=1", "app.topology.spineblocks=1"])
    return Target("malt", app, _generated(app, levels, per_level, seed), "code")


def malt_google(levels: Sequence[int] = (1, 3), per_level: int = 1, seed: int = 0) -> Target:
    app = _app("malt_google")
    return Target("malt_google", app, _generated(app, levels, per_level, seed), "code")


def k8s(levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0) -> Target:
    app = _app("k8s")
    queries = _generated(app, levels, per_level, seed)
    return Target("k8s", app, queries, "kubectl", KUBECTL_CORPUS)


def routing(levels: Sequence[int] = (1, 2, 3), per_level: int = 1, seed: int = 0) -> Target:
    from generators.routing.frr.generator import draw as frr_draw
    from generators.routing.generator import FRR_LEVELS, RoutingQueryGenerator, draw
    from pipeline.querygen import query_rng

    app = _app("routing", ["app.size=small"])
    generator = RoutingQueryGenerator(app.cfg)  # type: ignore[attr-defined]
    queries = []
    for level in levels:
        for index in range(per_level):
            rng = query_rng(seed, level, index)
            frr = level in FRR_LEVELS
            topo, faults = (frr_draw if frr else draw)(app.cfg, level, rng)  # type: ignore[attr-defined]
            oracle = [{"machine": m, "command": c} for f in faults for m, c in f.fix]
            build = generator._frr_query if frr else generator._query
            queries.append(build(level, seed, index, topo, faults, oracle))
    frr_only = all(level in FRR_LEVELS for level in levels)
    name = "routing L" + "".join(str(level) for level in levels)
    corpus = VTYSH_CORPUS + LAB_CORPUS[:6] if frr_only else LAB_CORPUS
    # FRR's oracle waits out the routing protocols' timers: first observation only.
    return Target(name, app, queries, "command", corpus, oracle_check=not frr_only)


def netllmbench(
    levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0
) -> Target:
    from generators.netllmbench.generator import NetLLMBenchQueryGenerator, draw
    from pipeline.querygen import query_rng

    app = _app("netllmbench")
    generator = NetLLMBenchQueryGenerator(app.cfg)  # type: ignore[attr-defined]
    queries = []
    for level in levels:
        for index in range(per_level):
            drawn = draw(app.cfg, level, index, query_rng(seed, level, index))  # type: ignore[attr-defined]
            queries.append(generator.query(level, seed, index, drawn))
    return Target("netllmbench", app, queries, "command", LAB_CORPUS)


TARGETS: dict[str, Callable[..., Target]] = {
    "malt": malt,
    "malt_google": malt_google,
    "k8s": k8s,
    "routing": routing,
    "routing_frr": lambda levels=(4, 5), **kw: routing(levels=levels, **kw),
    "netllmbench": netllmbench,
}
