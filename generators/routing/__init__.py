"""The routing app: troubleshoot a router and its subnets on a real Mininet network.

Faults are injected on a live lab (one router r0, N subnets, M hosts each); the agent
sees the reachability matrix and sends one sandboxed command per turn until every pair
pings again. Modules: topology (names, addresses, the lab), faults (five types, inject
and fix commands), config, prompt (task text, reply parsing), generator (seeded draws,
validated on a live network, keyed by topology and faults), capacity (distinct queries
per level, by formula), environment (topology pool, episodes), scoring (pure, from
step evidence), app (the pipeline.core.App), bench (timings).
"""

from pipeline.registry import AppSpec

APP_VERSION = "3"  # 2: distinct keys per seed slot; 3: TCP and UDP checks, level map of Table 5
APP = AppSpec(
    kind="routing", app=".app:RoutingApp", config=".config:RoutingConfig", version=APP_VERSION
)
