"""Benchmarks that cut across apps, so they live above them: no app imports this package.

Modules: isolation (what the jails cost per action: ip, iptables, tc, sysctl, ping, vtysh
and kubectl, bare vs the one-shot jail vs the persistent jail, back to back and spaced as
an agent's commands are; ~3 minutes), bounds (the kernel memory one lab can be made to
hold, before and after the bounds by effect; needs root, ~15 minutes), checks
(what the lab apps' intended-state checks cost per episode, and the prober against fping),
fuzz (the reply fuzzer's targets: hostile replies through every app and agent door,
crashes found; pipeline/fuzz/), labjail (zygote restarts and seconds per command over a
scripted incidents episode: reset, svcctl set, reads; ~2 minutes, root).
"""

from pipeline.api import BenchSpec

BENCHES = [
    BenchSpec("isolation", ".isolation:run_all", default=True),
    BenchSpec("checks", ".checks:bench"),
    BenchSpec("bounds", ".bounds:run_all"),
    BenchSpec("fuzz", ".fuzz:bench", default=True),
    BenchSpec("labjail", ".labjail:run_all"),
]
