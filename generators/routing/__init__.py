"""The routing app: troubleshoot a router and its subnets on a real Mininet network.

Faults are injected on a live lab (one router r0, N subnets, M hosts each); the agent
sees the reachability matrix and sends one sandboxed command per turn until every pair
pings again. Modules: topology (names, addresses, the lab), faults (five types, inject
and fix commands), config, prompt (task text, reply parsing), generator (seeded draws,
validated on a live network), environment (topology pool, episodes), scoring (pure, from
step evidence), app (the pipeline.core.App), bench (timings).
"""

APP_VERSION = "1"
