"""The standing security policy of large and xlarge incidents labs and its silent faults,
without a lab (generators/incidents/faults/security.py, faults/policy_dp.py).

The policy exists on large and xlarge labs only (small and medium labs, hence level 6,
draw, prompt and vocabulary exactly as before); its closed probes cover every router with
an address on a host LAN, on-link; each of its fault kinds draws on every family there,
purely, and on a simulated INPUT chain its injection opens what the probing host asks, its
evidence shows only then and its fix restores the chain exactly; every command passes the
agent's checks (fixes write, evidence only reads). No other kind of the catalogue touches
an INPUT chain, so none opens what the policy closes by accident. The live proof is
tests/test_faults_dp_live.py::test_the_security_policy_kinds_on_one_large_lab.
"""

from __future__ import annotations

import ipaddress
import random
import re
import shlex
from collections import Counter
from functools import cache

import pytest

from emulators.netcmd import policy, readonly
from generators.incidents.app import IncidentsApp
from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.draw import benign_kinds, fault_kinds, intent_only
from generators.incidents.faults import kinds as K
from generators.incidents.faults import security
from generators.incidents.prompt import prompt
from generators.netlab import build
from generators.netlab.spec import NetSpec

FAMILIES = ("chain", "ring", "mesh", "leafspine", "campus", "isp")
POLICY = ("missing", "shadowed", "narrow", "wrong_proto")
KINDS = tuple(f"dataplane.mgmt_filter_{n}" for n in POLICY)
BENIGN = "dataplane.noc_echo_allowed"


@cache
def _spec(family: str, size: str, variant: int = 0) -> NetSpec:
    return build(family, size, variant)


# -- the policy --------------------------------------------------------------------------
def test_the_policy_is_on_large_and_xlarge_labs_only():
    assert [s for s in ("small", "medium", "large", "xlarge") if security.applies(
        _spec("ring", s))] == ["large", "xlarge"]  # fmt: skip
    assert security.probes(_spec("ring", "medium")) == []
    assert security.intent_lines(_spec("campus", "medium")) == []
    assert security.startup() == tuple(
        ("iptables", "-A", "INPUT", *rule.split()) for rule in security.RULES
    )


def test_the_range_holds_every_lan_and_no_loopback_or_link():
    first, last = (ipaddress.IPv4Address(a) for a in security.LANS.split("-"))
    for family in FAMILIES:
        spec = _spec(family, "xlarge")
        for lan in spec.lans:
            net = ipaddress.IPv4Network(lan.subnet)
            assert first <= net.network_address and net.broadcast_address <= last, lan.subnet
        for r in spec.routers:
            assert not first <= ipaddress.IPv4Address(r.loopback) <= last
        for x in spec.links:
            assert not first <= ipaddress.IPv4Network(x.subnet).network_address <= last


@pytest.mark.parametrize("family", FAMILIES)
def test_every_router_on_a_host_lan_is_probed_on_link_over_tcp_and_udp(family):
    for size in ("large", "xlarge"):
        spec = _spec(family, size)
        probers = security.probers(spec)
        on_lan = {a.router for lan in spec.lans if lan.kind == "hosts" and lan.hosts
                  for a in lan.routers}  # fmt: skip
        assert [p.router for p in probers] == [r.name for r in spec.routers if r.name in on_lan]
        for p in probers:
            lan = spec.lan(p.lan)
            assert p.host in lan.hosts and p.subnet == lan.subnet
            assert p.address in {
                a.address.split("/")[0] for a in lan.routers if a.router == p.router
            }
        probes = security.probes(spec)
        assert len(probes) == 2 * len(probers) <= 56
        assert Counter(p.protocol for p in probes) == {"tcp": len(probers), "udp": len(probers)}
        assert all(p.kind == "closed" for p in probes)
        # the sources rotate: no host asks more than a few routers
        assert max(Counter(p.host for p in probers).values()) <= 3


def test_the_prompt_states_the_policy_where_the_lab_has_it_and_nowhere_else():
    def text(size: str, task: str) -> str:
        tier = TIERS[8 if size == "large" else 6]
        return prompt(_spec("ring", size), tier, task, (), turns=50, read_bytes=1 << 18,
                      ticket=None, vocabulary=None)  # fmt: skip

    large = text("large", "mitigate")
    assert "Security policy: no router answers TCP or UDP port 7" in large
    assert f"-A INPUT {security.TCP_RULE}" in large and f"-A INPUT {security.UDP_RULE}" in large
    assert "the security policy (what it closes stays closed)" in large
    assert "packet filters beyond those stated" in large
    medium = text("medium", "mitigate")
    assert "ecurity policy" not in medium and "INPUT" not in medium


# -- the kinds -----------------------------------------------------------------------------
def _chain(rules, argv: list[str]) -> list[str]:
    """`iptables -A/-I/-R/-D INPUT ...` on a list of rules in `iptables -S` form."""
    assert argv[0] == "iptables" and argv[2] == "INPUT", argv
    op, rest = argv[1], argv[3:]
    rules = list(rules)
    if op == "-A":
        rules.append(" ".join(rest))
    elif op == "-D":
        rules.remove(" ".join(rest))
    elif op in ("-I", "-R"):
        at, rule = int(rest[0]) - 1, " ".join(rest[1:])
        rules[at : at + (op == "-R")] = [rule]
    else:
        raise AssertionError(argv)
    return rules


def _listing(rules) -> str:
    return "\n".join(["-P INPUT ACCEPT", *(f"-A INPUT {r}" for r in rules)]) + "\n"


def _answers(rules, source: str, protocol: str) -> bool:
    """Whether the chain lets `source` reach port 7 over `protocol` (first match wins)."""
    src = ipaddress.IPv4Address(source)
    first, last = (ipaddress.IPv4Address(a) for a in security.LANS.split("-"))
    for rule in rules:
        words = rule.split()
        opt = dict(zip(words, [*words[1:], ""], strict=True))
        if "-p" in opt and opt["-p"] != protocol:
            continue
        if "--dport" in opt and opt["--dport"] != "7":
            continue
        if "-s" in opt and src not in ipaddress.IPv4Network(opt["-s"]):
            continue
        if "--src-range" in opt and not first <= src <= last:
            continue
        return opt["-j"] == "ACCEPT"
    return True


def _agent(command: str) -> tuple[bool, bool]:
    checked = policy.check(command)
    assert checked.allowed, (command, checked.reason)
    return True, readonly.write_refusal(checked.argv) is not None


@pytest.mark.parametrize("kind", [*KINDS, BENIGN])
def test_each_kind_opens_what_its_router_is_probed_for_and_its_fix_closes_it(kind):
    k = K.kind(kind)
    assert k.sizes == security.SIZES and set(k.topologies) == set(FAMILIES)
    assert k.checks == ({"benign"} if k.benign else {"closed"})
    assert k.benign or intent_only(k)
    healthy = list(security.RULES)
    for family in FAMILIES:
        for size in ("small", "medium"):
            assert k.draw(random.Random(0), _spec(family, size), K.Taken()) is None
        for size, seed in (("large", 1), ("xlarge", 2)):
            spec = _spec(family, size, seed % 4)
            fault = k.draw(random.Random(seed), spec, K.Taken())
            again = k.draw(random.Random(seed), spec, K.Taken())
            assert fault is not None and fault.to_json() == again.to_json()
            p = security.prober(spec, fault.cause.device)
            assert p is not None and fault.cause.component == "iptables:filter:INPUT"
            assert fault.elements == {f"iptables:filter:INPUT@{p.router}"}
            rules = healthy
            for step in fault.inject:
                assert step.device == p.router and step.how == "argv"
                rules = _chain(rules, list(step.lines))
            host = spec.host(p.host).address.split("/")[0]
            opened = {proto for proto in ("tcp", "udp") if _answers(rules, host, proto)}
            for ev in fault.evidence:
                assert ev.machine == p.router and _agent(ev.command) == (True, False)
                assert re.search(ev.pattern, _listing(rules), re.M)
                assert not re.search(ev.pattern, _listing(healthy), re.M)
            if fault.benign:
                assert opened == set() and fault.fix == () and fault.note
                noc = re.search(r"-s (\S+)/32", fault.inject[0].lines and " ".join(
                    fault.inject[0].lines)).group(1)  # fmt: skip
                assert noc != host and _answers(rules, noc, "tcp")
                continue
            assert opened == ({"tcp"} if kind.endswith("wrong_proto") else {"tcp", "udp"})
            for machine, command in fault.fix:
                assert machine == p.router and _agent(command) == (True, True)
                rules = _chain(rules, shlex.split(command))
            assert rules == healthy


def test_one_per_router_and_the_benign_anomaly_keeps_its_router():
    spec = _spec("mesh", "large")
    taken = K.Taken()
    routers = set()
    for kind in [BENIGN, *KINDS] * 30:
        fault = K.kind(kind).draw(random.Random(len(routers)), spec, taken)
        if fault is None:
            continue
        assert fault.cause.device not in routers
        routers.add(fault.cause.device)
        taken.add(fault)
    assert routers == {p.router for p in security.probers(spec)}


def test_no_other_kind_touches_an_input_chain():
    mine = {*KINDS, BENIGN}
    for k in K.kinds(benign=None):
        if k.id in mine:
            continue
        for family in sorted(k.topologies):
            for seed in range(3):
                fault = k.draw(random.Random(seed), _spec(family, "large", seed), K.Taken())
                if fault is None:
                    continue
                words = [w for i in fault.inject for w in i.lines]
                words += [w for _, c in fault.fix for w in c.split()]
                assert "INPUT" not in words, (k.id, fault.summary)


# -- levels ------------------------------------------------------------------------------
def test_level_6_neither_draws_nor_names_the_policy_kinds_and_level_8_does():
    app = IncidentsApp(IncidentsConfig(task="localize"))
    mine = {*KINDS, BENIGN}
    assert not mine & {w.kind for w in app.vocabulary(6).labels}
    assert set(KINDS) <= {w.kind for w in app.vocabulary(8).labels}
    for size in ("small", "medium"):
        spec = _spec("campus", size)
        assert not mine & {k.id for k in (*fault_kinds(spec, None), *benign_kinds(spec))}
    six = list(app.generator().generate(6, 0, 200, live=False))
    assert not any(f["kind"] in mine for q in six for f in q.ground_truth["faults"])
    eight = list(app.generator().generate(8, 0, 200, live=False))
    drawn = Counter(f["kind"] for q in eight for f in q.ground_truth["faults"])
    assert set(KINDS) <= set(drawn), drawn


def test_a_ticket_reports_an_open_flow_only_when_nothing_else_is_reported():
    from generators.incidents.tickets import choose

    spec = _spec("ring", "large")
    p = security.probers(spec)[0]
    closed = f"closed:tcp:{p.host}>{p.router}"
    near = f"intent:adjacency:{p.router}:r1-eth1"
    ticket = choose(spec, [closed, near], [p.router], random.Random(0))
    assert ticket is not None and ticket.violation == near
    alone = choose(spec, [closed], [p.router], random.Random(0))
    assert alone is not None and alone.violation == closed and "security audit" in alone.text


def test_level_8_on_small_labs_keeps_to_the_families_that_hold_an_intent_only_kind():
    from generators.incidents.draw import tier_families

    six = tuple(FAMILIES)
    assert tier_families(TIERS[8], six, None, ("large", "xlarge")) == six
    assert tier_families(TIERS[8], six, None, ("small",)) == ("ring", "mesh", "leafspine", "campus")


def test_the_policy_kinds_weigh_as_one_kind_in_a_draw():
    from generators.incidents.draw import _weighted

    spec = _spec("ring", "large")
    pool = fault_kinds(spec, None)
    assert {k.id for k in pool if k.group == "security_policy"} == set(KINDS)
    drawn = Counter(_weighted(random.Random(i), pool, None, "mitigate").id for i in range(4000))
    share = sum(drawn[k] for k in KINDS) / 4000
    others = len(pool) - len(KINDS)
    assert abs(share - 1 / (others + 1)) < 0.02, share
