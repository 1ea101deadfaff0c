"""The incidents app's settling rule and its evidence bounds, on fakes of our own lab boundary.

Settling (generators/incidents/settling.py) is fed readings a fake lab gives on a fake
clock: a neighbour a fault keeps cycling must not keep the lab "moving", a neighbour on
its way up must still be waited for, and routes that keep changing never settle. The
evidence bound (reading.matches, validate.validate): an evidence command the agent's
sandbox stops rejects its draw as that draw, and the next draw is taken.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from emulators.netcmd.sandbox import SandboxResult, Status
from generators.incidents import validate as validating
from generators.incidents.app import IncidentsApp
from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.draw import Drawn
from generators.incidents.faults import kinds as catalogue
from generators.incidents.faults.kinds import Evidence, Taken
from generators.incidents.reading import EvidenceUnfit, matches
from generators.incidents.settling import HELD_S, POLL_S, Reading, Unsettled, settle
from generators.incidents.specs import spec
from pipeline.api import EnvironmentFailure

ROUTES = {"r1": "10.0.0.0/24 dev r1-eth0 proto kernel", "r2": "10.0.1.0/24 via 10.0.0.2"}


class Clock:
    """Time that passes only when the settle loop sleeps or a reading is taken."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run(states: Callable[[float], Reading], window_s: float = 1.0) -> tuple[Reading, float]:
    clock = Clock()
    retried: list[tuple] = []
    reading = settle(
        lambda: states(clock.now), window_s, name="lab", retry_idle=retried.extend,
        clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    return reading, clock.now


def test_an_adjacency_a_fault_holds_in_exstart_settles_once_held():
    # an MTU mismatch: ExStart and Exchange alternate every retransmit, forever
    def states(now: float) -> Reading:
        cycle = "ExStart/DR" if int(now) % 2 else "Exchange/Backup"
        return Reading(ROUTES, {"r1|r1-eth1:10.0.0.1|2.2.2.2": cycle, "r2|x|1.1.1.1": "Full/DR"})

    reading, at = run(states)
    assert HELD_S <= at < HELD_S + 2.0
    assert reading.neighbours["r1|r1-eth1:10.0.0.1|2.2.2.2"] in ("ExStart/DR", "Exchange/Backup")


def test_a_neighbour_dropped_and_listed_again_while_held_changes_nothing():
    # campus-medium-0 under an MTU mismatch: ExStart, gone from the listing, ExStart again
    def states(now: float) -> Reading:
        listed = {"r1|x|2.2.2.2": "ExStart/-"} if int(now / 3) % 2 else {}
        return Reading(ROUTES, {**listed, "r2|y|1.1.1.1": "Full/DR"})

    _, at = run(states, window_s=4.5)
    assert HELD_S <= at < HELD_S + 4.5 + 3.5


def test_a_bgp_session_cycling_connect_and_active_settles_once_held():
    def states(now: float) -> Reading:
        return Reading(ROUTES, {"r1|172.16.0.2": "Connect OK" if int(now * 2) % 2 else "Active OK"})

    _, at = run(states)
    assert HELD_S <= at < HELD_S + 2.0


def test_an_adjacency_on_its_way_up_is_waited_for():
    # healthy but slow: Loading for 5 s, then Full; settled only a window after Full
    def states(now: float) -> Reading:
        return Reading(ROUTES, {"r1|x|2.2.2.2": "Loading/DR" if now < 5.0 else "Full/DR"})

    reading, at = run(states, window_s=4.5)
    assert reading.neighbours["r1|x|2.2.2.2"] == "Full/DR"
    assert 5.0 + 4.5 <= at < 5.0 + 4.5 + 3 * POLL_S + 0.01


def test_a_stable_lab_settles_after_its_window_and_min_samples():
    _, at = run(lambda now: Reading(ROUTES, {"r1|x|2.2.2.2": "Full/DR"}), window_s=1.0)
    assert 1.0 <= at < 1.0 + 2 * POLL_S


def test_routes_that_keep_changing_never_settle_and_the_error_says_where():
    def states(now: float) -> Reading:
        flap = "10.9.0.0/24 via 10.0.0.2" if int(now) % 2 else ""
        return Reading({**ROUTES, "r2": flap}, {"r1|x|2.2.2.2": "ExStart/DR"})

    with pytest.raises(Unsettled, match=r"kept changing for 40 s; last: .*r2.*10\.9\.0\.0/24"):
        run(states)
    assert issubclass(Unsettled, EnvironmentFailure)


def test_a_neighbour_that_comes_up_again_is_no_longer_held():
    # held from 12 s, Full at 14 s, Loading again at 16 s: waited for until Full at 19 s
    def states(now: float) -> Reading:
        state = "ExStart/DR" if now < 14.0 else "Full/DR"
        if 16.0 <= now < 19.0:
            state = "Loading/DR"
        return Reading(ROUTES, {"r1|x|2.2.2.2": state})

    reading, at = run(states, window_s=4.5)
    assert reading.neighbours["r1|x|2.2.2.2"] == "Full/DR"
    assert 19.0 + 4.5 <= at < 19.0 + 4.5 + 3 * POLL_S + 0.01


def test_idle_bgp_peers_are_retried_once():
    calls: list[tuple] = []
    clock = Clock()
    reading = Reading(ROUTES, {"r1|172.16.0.2": "Idle OK"}, idle=(("r1", "172.16.0.2"),))
    settle(lambda: reading, 1.0, name="lab", retry_idle=calls.append, clock=clock,
           sleep=clock.sleep)  # fmt: skip
    assert calls == [(("r1", "172.16.0.2"),)]


# -- evidence that does not fit the agent's bounds -------------------------------------


class Sandbox:
    def __init__(self, status: Status) -> None:
        self.status = status

    def run(self, machine: str, command: str) -> SandboxResult:
        reason = {Status.OUTPUT_LIMIT: "the output passed 8192 bytes; the command was stopped",
                  Status.TIMEOUT: "the command was stopped after 5 s"}.get(self.status)  # fmt: skip
        return SandboxResult(self.status, machine, command, output="x" * 100, reason=reason)


class FakeLab:
    def __init__(self, status: Status) -> None:
        self.gate = Sandbox(status)

    def sandbox_for(self, read_only: bool) -> Sandbox:
        assert read_only, "evidence is read through the read-only sandbox"
        return self.gate


EVIDENCE = Evidence("r1", "vtysh -c 'show ip ospf route'", r"10\.2\.5\.0/24")


@pytest.mark.parametrize("status", [Status.OUTPUT_LIMIT, Status.TIMEOUT])
def test_evidence_the_sandbox_stops_is_unfit(status):
    with pytest.raises(EvidenceUnfit, match=r"show ip ospf route.* on r1 does not fit"):
        matches(FakeLab(status), EVIDENCE)
    assert matches(FakeLab(Status.OK), Evidence("r1", "x", "x{100}")) is True


def test_a_draw_whose_evidence_is_unfit_is_rejected_and_the_next_draw_taken(monkeypatch):
    """validate.validate turns EvidenceUnfit into a typed rejection; the generator counts it
    and takes the next draw instead of failing the environment four times."""
    specs = {"unfit": spec("ring", "small", 0), "fits": spec("ring", "small", 1)}
    labs = {name: FakeLab(Status.OUTPUT_LIMIT if name == "unfit" else Status.OK) for name in specs}
    names = {s.name: name for name, s in specs.items()}
    validated: list[str] = []

    class Pool:
        def get(self, lab_spec: object) -> FakeLab:
            return labs[names[lab_spec.name]]

        def __enter__(self) -> Pool:
            return self

        def __exit__(self, *_: object) -> None:
            pass

    def fake_validate(lab, drawn, *_: object):
        # our own boundary: the session reads the draw's evidence through the lab
        validated.append(names[drawn.spec.name])
        matches(lab, EVIDENCE)
        return validating.Validated((), [], {}, "", {}, None, seconds={"start_s": 1.0})

    draws = iter(["unfit", "fits"])
    monkeypatch.setattr(validating, "_validate", fake_validate)
    monkeypatch.setattr("generators.incidents.generator.LabPool", lambda *_: Pool())
    monkeypatch.setattr(
        "generators.incidents.generator.draw",
        lambda *_, **__: Drawn(specs[next(draws)], (), (), "localize"),
    )
    gen = IncidentsApp(IncidentsConfig(task="localize")).generator()
    [query] = gen.generate(7, 0, 1, allow_repeats=True)
    assert validated == ["unfit", "fits"]
    assert query.env_key == specs["fits"].name
    assert gen.rejected == {"evidence unfit": 1}


# Commands whose output is a whole table: they pass the agent's 8 KiB in large labs
WHOLE_TABLES = ("show ip ospf route", "show ip route", "show ip ospf database", "show ip bgp",
                "show bgp ipv4 unicast", "ip route show table all")  # fmt: skip


def test_evidence_commands_are_narrow_and_bounded_by_construction():
    """On the largest labs a kind draws on, no evidence reads a whole table and every dig
    gives up inside the agent's 5 s (1 s x 1 try): what a live draw would otherwise reject."""
    seen = 0
    for kind in catalogue.kinds():
        for family in sorted(kind.topologies):
            for variant in range(4):
                lab = spec(family, "xlarge", variant)
                fault = kind.draw(random.Random(f"bounds:{kind.id}:{variant}"), lab, Taken())
                for e in fault.evidence if fault is not None else ():
                    seen += 1
                    words = e.command.split("'")[1] if e.command.startswith("vtysh") else e.command
                    assert words.strip() not in WHOLE_TABLES, (kind.id, e.command)
                    if e.command.startswith("dig "):
                        assert "+time=1 +tries=1" in e.command, (kind.id, e.command)
    assert seen > 200


def test_masking_is_read_from_the_oracles_states_against_the_single_signatures():
    """bgp.neighbor_shutdown masks bgp.remote_as: proven when remote_as alone shows nothing
    shutdown alone does not, and shows once shutdown was fixed (remote_as still in)."""
    shut, wrong_as = (
        SimpleNamespace(kind="bgp.neighbor_shutdown"),
        SimpleNamespace(kind="bgp.remote_as"),
    )
    other = SimpleNamespace(kind="dataplane.forward_drop")
    alone = {"bgp.neighbor_shutdown": frozenset({"intent:bgp:r1|x", "works:icmp:h1>h2"}),
             "bgp.remote_as": frozenset({"intent:bgp:r1|x"}),
             "dataplane.forward_drop": frozenset({"works:tcp:h3>h4"})}  # fmt: skip
    order = (shut, wrong_as, other)
    assert validating._may_mask(order) and not validating._may_mask((other, wrong_as))
    shown = [frozenset({"intent:bgp:r1|x", "works:tcp:h3>h4"})]
    assert validating._masking(order, shown, alone) == [["bgp.neighbor_shutdown", "bgp.remote_as"]]
    hidden = [frozenset({"works:tcp:h3>h4"})]  # the masked fault's signature never showed
    assert validating._masking(order, hidden, alone) == []
    assert validating._masking(order, [], alone) == []  # the oracle ended before its fix
    shut.elements = wrong_as.elements = frozenset({"session:r1-r2"})
    other.elements = frozenset({"router:r3"})
    assert validating._masked(order) == {"bgp.remote_as", "bgp.neighbor_shutdown"}  # mutual
    wrong_as.elements = frozenset({"session:r1-r4"})  # another session: nothing masks it
    assert validating._masked(order) == frozenset()
    assert "remote_as shows none of" in validating._unproven(order, hidden, alone)
    noisy = {**alone, "bgp.remote_as": frozenset({"intent:bgp:r1|x", "works:udp:h5>h6"})}
    assert "alone shows ['works:udp:h5>h6']" in validating._unproven(order, shown, noisy)


def test_where_no_ticket_can_be_distant_a_composed_tier_draws_a_masking_pair():
    """Leaf-spine (2 router hops at every size) and medium campus labs hold no distant
    symptom: at levels 7-8 every draw there holds a masking pair, or is refused before any
    lab work; on a chain half the draws still take the distant-ticket route."""
    from generators.incidents.draw import draw
    from generators.incidents.tickets import may_be_distant

    assert not may_be_distant(spec("leafspine", "medium", 0))
    assert not may_be_distant(spec("campus", "medium", 0))
    assert may_be_distant(spec("chain", "medium", 0))
    for family in ("leafspine", "campus"):
        lab = spec(family, "medium", 0)
        drawn = [draw(lab, TIERS[7], "mitigate", None, random.Random(i)) for i in range(40)]
        made = [d for d in drawn if not isinstance(d, str)]
        assert made, family
        for d in made:  # the masked fault sits on its masker's element, at the other end
            assert any(
                g.kind in catalogue.kind(f.kind).masks
                and f.elements & g.elements
                and f.cause.device != g.cause.device
                for f in d.faults
                for g in d.faults
            ), (family, [(f.kind, sorted(f.elements)) for f in d.faults])
        refused = [d for d in drawn if isinstance(d, str)]
        assert all("no masking pair drawn" in d or "room for" in d for d in refused), refused
    chain = [draw(spec("chain", "medium", 0), TIERS[7], "mitigate", None, random.Random(i))
             for i in range(40)]  # fmt: skip
    pairs = [
        validating._may_mask(validating._order(d.faults)) for d in chain if not isinstance(d, str)
    ]
    assert 0 < sum(pairs) < len(pairs)
