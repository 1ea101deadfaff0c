"""NetLLMBench's configuration tasks: address, gateway, route and ping a small lab.

NetLLMBench (one router, two switches, three hosts on Kathará) asks an agent to carry out
nine cumulative tasks — give three hosts and two router interfaces their addresses, set
the hosts' default gateways, ping one host from another — with three attempts per task.
Here the lab is drawn from a seed (names, subnets, which host hangs off which switch,
task order where dependencies allow; two routers with a static route at level 3) and
runs on either emulator (`emulator=mininet|kathara`). Success is read from the
network's state after each step: the address on the right interface of the right
device, the default route via the right gateway, the ping's replies.

Modules: lab (the drawn network: devices, interfaces, addressing plan), tasks (task
kinds, their texts, oracle commands and state checks), config, generator (seeded draws,
validated on a live lab, keyed by lab and tasks), capacity (a lower bound of the
distinct queries per level), environment (lab pool, episodes), scoring (pure, from step
evidence), app (the pipeline.core.App), bench (both backends timed on the paper's lab).
"""

from pipeline.registry import AppSpec

APP_VERSION = "3"  # 2: distinct keys per seed slot; 3: end-to-end checks, lasting state only
APP = AppSpec(
    kind="netllmbench",
    app=".app:NetLLMBenchApp",
    config=".config:NetLLMBenchConfig",
    version=APP_VERSION,
)
