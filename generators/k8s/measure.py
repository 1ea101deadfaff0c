"""What a step reports: the cluster's data plane probed afresh against the intended results."""

from __future__ import annotations

from typing import Any

from emulators.k8s.policy import mismatches


def measure(cluster: Any, expected: dict[str, bool]) -> tuple[list[str], list[str], int]:
    """(mismatching probes, those of them that failed at DNS, how many of `expected` were
    probed) of the cluster's data plane now."""
    results = cluster.probe()
    actual = {k: ok for k, (ok, _) in results.items()}
    after = mismatches(expected, actual)
    dns = [k for k in after if results.get(k, (False, ""))[1].startswith("dns")]
    return after, dns, sum(k in results for k in expected)
