"""Kathará backend: labs on Kathará through NetGauge's own dockerd (see emulator.py)."""
