"""Mininet backend of the emulator interface (emulators/base.py).

Modules: emulator (MininetEmulator), nodes (Mininet import, bridge switch, scripts in
node shells), instances (prefixes, lock files, stale cleanup), state (dump / compare /
restore of a node's network state), process (an agent's argv in a node's namespaces,
with a timeout and an output cap). Mininet itself is imported only when a lab is built.
"""
