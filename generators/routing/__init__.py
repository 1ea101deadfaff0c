"""The routing app: troubleshoot a router and its subnets on a real Mininet network.

Faults are injected on a live lab (one router r0, N subnets, M hosts each); the agent
sees the reachability matrix and sends one sandboxed command per turn until every pair
pings again. Modules: topology (names, addresses, the lab), faults (five types, inject
and fix commands), config, prompt (task text, reply parsing), generator (seeded draws,
validated on a live network, keyed by topology and faults), capacity (distinct queries
per level, by formula), environment (topology pool, episodes), scoring (pure, from
step evidence), app (the pipeline.core.App), bench (timings). Levels 4 and 5 run OSPF
(and eBGP) on FRR routers in a chain: generators/routing/frr/ (bench_levels: their figures).
"""

from pipeline.api import AppSpec, BenchSpec

# 2: distinct keys per seed slot; 3: TCP and UDP checks, level map of Table 5. Levels 4-5
# (FRR) and the faults/size/weights knobs came without a bump: every query levels 1-3 drew
# before is drawn byte for byte the same (their keys, prompts and ground truth), and
# levels 4-5 had no earlier version to tell apart. 4: levels 4-5 judged on the intended
# protocol state too (a repair by static routes is wrong; issue 26), their prompts say so
# and level 4's names no AS; levels 1-3 draw the same queries as in 3 (only the version in
# their ground truth differs).
APP_VERSION = "4"
APP = AppSpec(
    kind="routing",
    app=".app:RoutingApp",
    config=".config:RoutingConfig",
    version=APP_VERSION,
    levels=(1, 2, 3, 4, 5),  # 4 and 5: FRR (generators/routing/frr/)
    benches=(
        BenchSpec("routing", ".bench:run_all", default=True),
        BenchSpec("routing_levels", ".bench_levels:run_levels"),
    ),
)
