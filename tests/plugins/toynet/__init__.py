"""Toynet: a pretend network of a few routers, to try the task kinds without a lab.

Each router r1..rN has interfaces eth0 (its LAN 10.0.<i>.1/24) and eth1 (the core
10.255.0.<i>/24) and a route to every other router's LAN. Faults: an interface down, an
interface with the wrong address, a missing route. Tasks: mitigate (fix it with `set`,
`addr`, `route` commands), detect (healthy networks are half the queries) and localize
(name every fault). Read-only in detect and localize: writes are blocked steps. Per level
a turn budget and a read budget (small on purpose, so tests can spend it).
"""

from pipeline.api import AppSpec

APP = AppSpec(
    kind="toynet",
    app=".app:ToynetApp",
    config=".app:ToynetConfig",
    version="1",
    levels=(1, 2, 3),
    tasks=("mitigate", "detect", "localize"),
)
