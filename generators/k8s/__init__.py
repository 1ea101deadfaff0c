"""The k8s app: NetworkPolicy troubleshooting with the real kubectl, on Online Boutique and on
generated microservice applications.

Modules: boutique (Online Boutique's objects and intended policies), callgraph and
manifests (seeded applications of three size classes, and their hardened policies),
clusters (the clusters queries run on), faults (levels, fault injection and the oracle's
repair) with mistakes (Online Boutique's fault families), hardened, hardened_egress and
rule_edits (a generated application's), singles (its single faults), evaluator (the pure
probe evaluator), generator (validated queries per level, keyed by the faulted policies),
capacity and counting (how many distinct queries each level holds), prompt (what the
agent is told), reply (parsing an agent's reply into one kubectl command), scoring
(correct and safe from recorded steps), config, app (the pipeline.core.App), bench
(timings). The environment itself is emulators/k8s.
"""

from pipeline.api import AppSpec, BenchSpec

# 2: distinct keys per seed slot, wider faults. 3: pod probes of what must stay closed
# (and open) beside the Services' ports, DNS failures in reports, probes retried. 4: levels
# 4 and 5 on generated multi-namespace applications, the `faults` and `size` knobs,
# failure-driven weights; levels 1-3 on Online Boutique draw the same queries as in 3.
# 5: levels 6-8 (estates, the catalogue of kinds, tiers) and the detect and localize tasks;
# levels 1-5 draw what they drew in 4.
# 6: levels 6-8 draw a fault's placement uniformly within its kind and cap each size x
# kind x placement at 9.5 % of a run (variety.py); levels 1-5 draw what they drew in 5.
# 7: which detect query of levels 6-8 is healthy (one of each pair of indices, in an order
# the seed draws, as the incidents app decides it); levels 1-5 draw what they drew in 6.
# 8: level 8 adds k8s.policy_extra and 2-3 decoy policies a query
# (strays.py); levels 1-7 draw what they drew in 7.
APP_VERSION = "8"
APP = AppSpec(
    kind="k8s",
    app=".app:K8sApp",
    config=".config:K8sConfig",
    version=APP_VERSION,
    levels=(1, 2, 3, 4, 5, 6, 7, 8),  # faults.LEVELS (1-5), tiers.TIERS (6-8)
    tasks=("mitigate", "detect", "localize"),  # detect and localize: levels 6-8
    # Query i depends on its index and the queries before it only (every cap is a share
    # of the index): n queries are the first n of any more (tests/test_prefix_queries.py).
    prefix_queries=True,
    benches=(
        BenchSpec("k8s", ".bench:run_all", default=True),
        BenchSpec("k8s_levels", ".bench:run_levels"),
    ),
)
