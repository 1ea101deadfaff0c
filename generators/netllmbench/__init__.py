"""NetLLMBench's configuration tasks: address, gateway, route and ping a small lab.

NetLLMBench (one router, two switches, three hosts on Kathará) asks an agent to carry out
nine cumulative tasks — give three hosts and two router interfaces their addresses, set
the hosts' default gateways, ping one host from another — with three attempts per task.
Here the lab is drawn from a seed (names, subnets, which host hangs off which switch,
task order where dependencies allow; two routers with a static route at level 3) and
runs on either emulator (`emulator=mininet|kathara`). Levels 4 (two routers) and 5 (a
chain of three or more) ask the same tasks as goals over an addressing plan by role,
without interface names or router addresses, on labs whose interfaces are described.
Success is read from the network's state after each step: the address on the right
interface of the right device, the default route via the right gateway, the ping's
replies, and what must work end to end.

Modules: lab (the drawn network: devices, interfaces, addressing plan), tasks (task
kinds, their texts, oracle commands and state checks), goals (levels 4 and 5: goal texts,
the plan by role, scenarios), config, generator (seeded draws, validated on a live lab,
keyed by lab and tasks), capacity (a lower bound of the distinct queries per level),
environment (lab pool, episodes), scoring (pure, from step evidence), app (the
pipeline.core.App), bench (both backends timed on the paper's lab; levels 4 and 5 sized).
"""

from pipeline.api import AppSpec, BenchSpec

# 2: distinct keys per seed slot; 3: end-to-end checks, lasting state only; 4: levels 4-5
# say which command shows an interface's description (`ip -br link` does not; issue 26).
# Levels 1-3 draw the same queries byte for byte (a pinned digest), but for this number.
APP_VERSION = "4"
APP = AppSpec(
    kind="netllmbench",
    app=".app:NetLLMBenchApp",
    config=".config:NetLLMBenchConfig",
    version=APP_VERSION,
    levels=(1, 2, 3, 4, 5),  # 4 and 5: goals over an addressing plan (goals.py)
    # Query i depends on its index and the queries before it only (every cap is a share
    # of the index): n queries are the first n of any more (tests/test_prefix_queries.py).
    prefix_queries=True,
    benches=(
        BenchSpec("emulators", ".bench:run_all", default=True),
        BenchSpec("netllmbench_levels", ".bench:run_levels"),
    ),
)
