"""The k8s app: NetworkPolicy troubleshooting on Online Boutique with the real kubectl.

Modules: boutique (the cluster objects and intended policies), faults (seeded fault
injection and the oracle's repair), generator (validated queries per level, keyed by the
faulted policies), capacity (how many distinct queries each level holds), prompt (what
the agent is told), reply (parsing an agent's reply into one kubectl command), scoring
(correct and safe from recorded steps), config, app (the pipeline.core.App), bench
(timings). The environment itself is emulators/k8s.
"""

from pipeline.registry import AppSpec

# 2: distinct keys per seed slot, wider faults. 3: pod probes of what must stay closed
# (and open) beside the Services' ports, DNS failures in reports, probes retried.
APP_VERSION = "3"
APP = AppSpec(kind="k8s", app=".app:K8sApp", config=".config:K8sConfig", version=APP_VERSION)
