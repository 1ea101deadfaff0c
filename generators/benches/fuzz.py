"""The reply fuzzer's targets and its benchmark: every app at every level, with queries that
cost no validation (the fuzzer itself, app-blind, is pipeline/fuzz/).

Queries come from each app's own draw (the generate stage's seeded draws); the lab apps'
are not validated on a live lab first (validation costs a lab build per query, and a
fuzzed reply needs a network, not a solvable task), so their oracle replies are the
faults' fixes in drawn order. The command corpora below add what an operator of each app
types, so mutations reach every tool's grammar and not only the oracle's commands.

    python -m pipeline.bench --only fuzz      # `bench`: FUZZ_BUDGET, data/bench/fuzz.json
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.api import (
    App,
    FuzzTarget,
    NetGaugeError,
    Query,
    fuzz_app,
    fuzz_figures,
    load_app,
    query_rng,
)

LAB_CORPUS = (
    "ip -br addr", "ip route show", "ip route add 10.0.9.0/24 via 10.0.1.1",
    "ip route del default", "ip addr add 10.0.9.1/24 dev eth0", "ip link set eth0 up",
    "ip -6 rule add pref 100 prohibit", "ip neigh add proxy 10.0.0.9 dev eth0",
    "ip rule add from 10.0.0.0/8 table 7", "sysctl -w net.ipv4.ip_forward=1",
    "iptables -A FORWARD -s 10.0.1.0/24 -j DROP", "iptables -D FORWARD 1", "iptables -S",
    "iptables -I INPUT -p tcp -m multiport --dports 22,80,443 -j ACCEPT",
    "iptables -A INPUT -m comment --comment hello -j ACCEPT",
    "iptables -A INPUT -m string --string abc --algo bm -j DROP",
    "iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE", "iptables -F",
    "tc qdisc add dev eth0 root tbf rate 1mbit burst 32kbit latency 400ms",
    "tc qdisc show", "ping -c 1 -W 1 10.0.0.1", "arp -n", "ip -j route",
    "iptables -I FORWARD -m comment --comment note -j ACCEPT",
    "iptables -A OUTPUT -p udp -m string --string x --algo kmp -j DROP",
    "iptables -A INPUT -j LOG --log-prefix seen", "ip link set dev eth0 alias uplink",
)  # fmt: skip
VTYSH_CORPUS = (
    "vtysh -c 'show running-config'", "vtysh -c 'show ip ospf neighbor'",
    "vtysh -c 'show bgp summary json'",
    "vtysh -c 'configure terminal' -c 'router ospf' -c 'network 10.0.1.0/24 area 0'",
    "vtysh -c 'configure terminal' -c 'router bgp 65001' -c 'neighbor 10.0.0.2 remote-as 65002'",
    "vtysh -c 'configure terminal' -c 'router bgp 65001' -c 'neighbor 10.0.0.2 description peer'",
    "vtysh -c 'conf t' -c 'interface eth0' -c 'ip ospf cost 10'",
    "vtysh -c 'configure terminal' -c 'ip prefix-list p seq 5 permit 10.0.0.0/8 le 32'",
    "vtysh -d ospfd -c 'show ip ospf'", "vtysh -E -c 'show ip route'",
)  # fmt: skip
KUBECTL_CORPUS = (
    "kubectl get networkpolicies -A", "kubectl get pods -o wide",
    "kubectl describe networkpolicy adservice",
    "kubectl get networkpolicy adservice -o json", "kubectl delete networkpolicy adservice",
    "kubectl label namespace default a=b --overwrite", "kubectl api-resources",
    "kubectl explain networkpolicy.spec", "kubectl get ns --show-labels",
    "kubectl patch networkpolicy adservice --type=merge -p '{\"spec\":{\"podSelector\":{}}}'",
)  # fmt: skip


def _app(name: str, overrides: Sequence[str] = ()) -> App:
    return load_app(f"app={name}", *overrides)


def _generated(app: App, levels: Sequence[int], per_level: int, seed: int) -> list[Query]:
    return [q for level in levels for q in app.generate(level, seed, per_level)]


def malt(levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0) -> FuzzTarget:
    app = _app("malt", ["app.topology.superblocks=1", "app.topology.spineblocks=1"])
    return FuzzTarget("malt", app, _generated(app, levels, per_level, seed), "code")


def malt_google(levels: Sequence[int] = (1, 3), per_level: int = 1, seed: int = 0) -> FuzzTarget:
    app = _app("malt_google")
    return FuzzTarget("malt_google", app, _generated(app, levels, per_level, seed), "code")


def k8s(levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0) -> FuzzTarget:
    app = _app("k8s")
    queries = _generated(app, levels, per_level, seed)
    return FuzzTarget("k8s", app, queries, "kubectl", KUBECTL_CORPUS)


def routing(levels: Sequence[int] = (1, 2, 3), per_level: int = 1, seed: int = 0) -> FuzzTarget:
    from generators.routing.frr.generator import draw as frr_draw
    from generators.routing.generator import FRR_LEVELS, RoutingQueryGenerator, draw

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
    return FuzzTarget(name, app, queries, "command", corpus, oracle_check=not frr_only)


def netllmbench(
    levels: Sequence[int] = (1, 2, 3, 4, 5), per_level: int = 1, seed: int = 0
) -> FuzzTarget:
    from generators.netllmbench.generator import NetLLMBenchQueryGenerator, draw

    app = _app("netllmbench")
    generator = NetLLMBenchQueryGenerator(app.cfg)  # type: ignore[attr-defined]
    queries = []
    for level in levels:
        for index in range(per_level):
            drawn = draw(app.cfg, level, index, query_rng(seed, level, index))  # type: ignore[attr-defined]
            queries.append(generator.query(level, seed, index, drawn))
    return FuzzTarget("netllmbench", app, queries, "command", LAB_CORPUS)


TARGETS: dict[str, Callable[..., FuzzTarget]] = {
    "malt": malt,
    "malt_google": malt_google,
    "k8s": k8s,
    "routing": routing,
    "routing_frr": lambda levels=(4, 5), **kw: routing(levels=levels, **kw),
    "netllmbench": netllmbench,
}


# Replies per target in `make bench` (CI plays tests/test_fuzz.py's smaller budget); about
# 40 minutes on two busy cores, most of it routing's and FRR's steps.
FUZZ_BUDGET = {"malt": 2000, "malt_google": 200, "k8s": 300, "routing": 500,
               "routing_frr": 60, "netllmbench": 500}  # fmt: skip
DOOR_TURNS = 150  # turns through each agent door per target


def bench(budget: dict[str, int] | None = None, door_turns: int = DOOR_TURNS) -> dict[str, Any]:
    """`python -m pipeline.bench --only fuzz`: replies tried per app and door, statuses,
    and every crash found with its reproducer (pipeline/fuzz/run.py: fuzz_figures)."""
    started = time.monotonic()
    runs, skipped = [], {}
    for name, replies in (budget or FUZZ_BUDGET).items():
        try:
            target = TARGETS[name]()
        except NetGaugeError as err:  # e.g. Google's MALT example is not on this machine
            skipped[f"{name}_skipped"] = str(err)[:300]
            continue
        # A tenth of the budget again from each door: FRR's steps take seconds each.
        extra = max(1, replies // 10)
        runs.append(
            fuzz_app(target, replies, door_turns, "bench", door_replies=extra, progress=print)
        )
    return fuzz_figures(runs, time.monotonic() - started) | skipped
