"""Mininet backend of the emulator interface (emulators/base.py).

Modules: emulator (MininetEmulator, a NamespaceEmulator: emulators/namespaced.py), nodes
(Mininet import, bridge switch, scripts in node shells), instances (the processes and
namespaces of a prefix, stale cleanup), process (an agent's argv in a node's namespaces,
with a timeout and an output cap). Mininet itself is imported only when a lab is built.
"""

from pipeline.registry import BackendSpec

BACKEND = BackendSpec(name="mininet", emulator=".emulator:MininetEmulator", display="Mininet")
