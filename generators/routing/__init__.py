"""The routing app: troubleshoot a router and its subnets on a real Mininet network.

Faults are injected on a live lab (one router r0, N subnets, M hosts each); the agent
sees the reachability matrix and sends one sandboxed command per turn until every pair
pings again. Modules: topology (names, addresses, the lab), faults (five types, inject
and fix commands), config, prompt (task text, reply parsing), generator (seeded draws,
validated on a live network, keyed by topology and faults), capacity (distinct queries
per level, by formula), environment (topology pool, episodes), scoring (pure, from
step evidence), app (the pipeline.core.App), bench (timings). Levels 4 and 5 run OSPF
(and eBGP) on FRR routers in a chain: generators/routing/frr/ (bench_levels: their figures;
bench_warm: warm labs against the cold path).
"""

from pipeline.api import AppSpec, BenchSpec

# 2: distinct keys per seed slot; 3: TCP and UDP checks, level map of Table 5. Levels 4-5
# (FRR) and the faults/size/weights knobs came without a bump: every query levels 1-3 drew
# before is drawn byte for byte the same (their keys, prompts and ground truth), and
# levels 4-5 had no earlier version to tell apart. 4: levels 4-5 judged on the intended
# protocol state too (a repair by static routes is wrong; issue 26), their prompts say so
# and level 4's names no AS; levels 1-3 draw the same queries as in 3 (only the version in
# their ground truth differs). 5: levels 4-5 run fast OSPF timers (hellos every 250 ms, dead
# 1 s: issue 29's warm labs), so the ospf_timers fault's summary and fix name them (its fix
# was hello 1 s / dead 4 s); every other fault, every key and every prompt of levels 1-5 is
# drawn as in 4 (only the version in their ground truth differs).
APP_VERSION = "5"
APP = AppSpec(
    kind="routing",
    app=".app:RoutingApp",
    config=".config:RoutingConfig",
    version=APP_VERSION,
    levels=(1, 2, 3, 4, 5),  # 4 and 5: FRR (generators/routing/frr/)
    # Query i depends on its index and the queries before it only (every cap is a share
    # of the index): n queries are the first n of any more (tests/test_prefix_queries.py).
    prefix_queries=True,
    benches=(
        BenchSpec("routing", ".bench:run_all", default=True),
        BenchSpec("routing_levels", ".bench_levels:run_levels"),
        BenchSpec("routing_warm", ".bench_warm:run_warm"),
    ),
)
