"""Kathará backend: labs on Kathará through NetGauge's own dockerd (see emulator.py);
a NamespaceEmulator (emulators/namespaced.py), like the Mininet backend."""
