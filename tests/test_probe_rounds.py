"""The prober's rounds (emulators/probe.py) without a lab: which answers of a round it
trusts while the machine-wide neighbour table overflows. `Round` (one round of sockets,
emulators/probe_round.py) is replaced by scripted outcomes; the live rounds are covered by
tests/test_emulator_contract.py."""

from __future__ import annotations

import pytest

from emulators import probe
from emulators.probe import Flow, Prober
from emulators.probe_round import _Result

SAME_LAN = Flow("h1", "h2", "10.0.1.12")
CUT = Flow("h1", "h3", "10.0.3.13")


def unresolved() -> _Result:
    return _Result(refused="icmp 3/1 from 10.0.1.1", unresolved=True)


def answered() -> _Result:
    return _Result(seen=True, replied=0.001)


def scripted(monkeypatch, rounds: list[dict[Flow, _Result]], fulls: list[int]) -> list[list]:
    """Round i answers rounds[i]; table_fulls reads `fulls` in turn (two reads a round)."""
    sent: list[list] = []
    counts = iter(fulls)

    class Round:
        def __init__(self, netns, flows):
            self.flows = flows

        def run(self, timeout):
            sent.append(self.flows)
            script = rounds[len(sent) - 1]
            return {f: script.get(f, answered()) for f in self.flows}

    monkeypatch.setattr(probe, "Round", Round)
    monkeypatch.setattr(probe, "table_fulls", lambda: next(counts))
    return sent


def prober() -> Prober:
    return Prober({"h1": 0, "h2": 0, "h3": 0}, timeout_s=0.1, retries=1)


def test_host_unreachable_from_an_overflowing_round_is_asked_again(monkeypatch):
    sent = scripted(monkeypatch, [{SAME_LAN: unresolved()}, {}], [0, 5, 5, 5])
    assert prober().probe([SAME_LAN]) == {SAME_LAN: True}
    assert sent == [[SAME_LAN], [SAME_LAN]]


@pytest.mark.parametrize("fulls", [[0, 0], [3, 3]])
def test_host_unreachable_from_a_clean_round_is_a_failure(monkeypatch, fulls):
    sent = scripted(monkeypatch, [{CUT: unresolved()}], fulls)
    assert prober().probe([CUT]) == {CUT: False} and len(sent) == 1


def test_a_cut_neighbour_stays_failed_once_a_round_is_clean(monkeypatch):
    refused = _Result(refused="refused at the source: No route to host", unresolved=True)
    sent = scripted(monkeypatch, [{CUT: refused}, {CUT: refused}], [0, 1, 1, 1])
    assert prober().probe([CUT, SAME_LAN]) == {CUT: False, SAME_LAN: True}
    assert len(sent) == 2 and CUT in sent[1]  # the clean second round decides it


def test_other_refusals_are_final_even_in_an_overflowing_round(monkeypatch):
    reset = _Result(refused="tcp: Connection refused")
    sent = scripted(monkeypatch, [{CUT: reset}], [0, 9])
    assert prober().probe([CUT]) == {CUT: False} and len(sent) == 1
