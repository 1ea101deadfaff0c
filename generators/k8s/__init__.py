"""The k8s app: NetworkPolicy troubleshooting on Online Boutique with the real kubectl.

Modules: boutique (the cluster objects and intended policies), faults (seeded fault
injection and the oracle's repair), generator (validated queries per level), prompt
(what the agent is told), reply (parsing an agent's reply into one kubectl command),
scoring (correct and safe from recorded steps), config, app (the pipeline.core.App),
bench (timings). The environment itself is emulators/k8s.
"""

APP_VERSION = "1"
