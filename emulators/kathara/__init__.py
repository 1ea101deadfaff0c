"""Kathará backend: labs on Kathará through NetGauge's own dockerd (see emulator.py);
a NamespaceEmulator (emulators/namespaced.py), like the Mininet backend."""

from pipeline.registry import BackendSpec

BACKEND = BackendSpec(name="kathara", emulator=".emulator:KatharaEmulator", display="Kathará")
