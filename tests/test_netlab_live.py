"""Generated labs live (generators/netlab/): one small lab per family built on Mininet, FRR
started in its jails, converged; every intended adjacency and session up, every host pair
working over ICMP, TCP and UDP, and the path and ECMP intents true in the kernels' FIBs.
The environment's own reads over vty sessions print what vtysh prints. Also the daemons'
own dry-run over every configuration shape of the tier catalogue.

One module fixture builds the six labs one after another (one alive at a time) and
records what the tests assert: about 25 s on two cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from generators.lab.frr.daemons import installed
from generators.netlab import FAMILIES, SIZES, VARIANTS, NetSpec, build
from generators.netlab.frrcheck import check_specs, refusals
from generators.netlab.live import LabState, NetLab, host_flows
from tests.conftest import integration_fixture, require, require_emulator

pytestmark = pytest.mark.integration

# Small variants that carry each family's features: two ASes (chain), two areas with a
# stub and a spare link (ring), ECMP and path intents (mesh), a multi-site customer with
# dual-homed CEs (isp), an NSSA block with two access switches (campus).
LABS = {
    "chain": ("small", 1),
    "ring": ("small", 7),
    "mesh": ("small", 1),
    "leafspine": ("small", 3),
    "campus": ("small", 1),
    "isp": ("small", 20),
}


@dataclass
class Seen:
    spec: NetSpec
    state: LabState
    flows: int
    failed: list[str]
    fib: dict[str, str]  # "<router> <prefix or address>" -> `ip route` output
    aliases: str  # `ip -o link` of the first router
    answers: list[tuple[str, str, str]]  # (router, vty sessions, vtysh), digits masked


def _observe(spec: NetSpec) -> Seen:
    with NetLab(spec) as lab:
        lab.converge()
        state = lab.state()
        flows = host_flows(spec)
        failed = [f"{f.source}->{f.target}/{f.protocol}" for f, ok in lab.emu.probe(flows).items()
                  if not ok]  # fmt: skip
        asks = {f"{e.router} {e.prefix}": (e.router, f"ip -4 route show {e.prefix}")
                for e in spec.ecmp}  # fmt: skip
        for p in spec.paths:
            target = spec.host(p.target).address.split("/")[0]
            for router in p.routers:
                asks[f"{router} {target}"] = (router, f"ip -4 route get {target}")
        fib = {}
        for key, (router, command) in asks.items():  # one shell round per router at most
            fib[key] = lab.emu._shell({router: command})[router][1]
        first = spec.routers[0].name
        aliases = lab.emu.run(first, ["ip", "-o", "link"], timeout_s=5, output_bytes=65536)
        answers = []
        for group in {id(g): g for g in lab.daemons.values()}.values():
            lines = [line for d, line in READS if d in group.daemons]
            vty = group.answer(dict.fromkeys(group.routers, lines))
            vtysh = group.vtysh_all(group.routers, lines)
            answers += [(r, _masked(vty[r]), _masked(vtysh[r])) for r in group.routers]
        return Seen(spec, state, len(flows), failed, fib, aliases.output, answers)


READS = (("ospfd", "show ip ospf neighbor json"), ("bgpd", "show bgp summary json"))


def _masked(out: str) -> str:
    """Counters and timers go on between two reads; the rest must be the same."""
    return re.sub(r"\d+", "N", out)


@pytest.fixture(scope="module")
@integration_fixture
def seen() -> dict[str, Seen]:
    require_emulator("mininet")
    missing = installed()
    require(missing is None, missing or "")
    return {family: _observe(build(family, *LABS[family])) for family in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_intended_adjacency_and_session_is_up_and_every_pair_works(seen, family):
    got = seen[family]
    assert got.state.converged, got.state.summary()
    assert got.failed == [] and got.flows == 3 * len(got.spec.hosts) * (len(got.spec.hosts) - 1)
    wants = {
        "chain": (2, 1),
        "ring": (4, 0),
        "mesh": (8, 0),
        "leafspine": (0, 6),
        "campus": (6, 0),
        "isp": (3, 7),
    }[family]
    assert (len(got.spec.adjacencies), len(got.spec.sessions)) == wants


def test_ecmp_and_path_intents_hold_in_the_fib(seen):
    checked = 0
    for got in seen.values():
        for e in got.spec.ecmp:
            out = got.fib[f"{e.router} {e.prefix}"]
            devs = sorted(re.findall(r"nexthop via \S+ dev (\S+)", out))
            assert devs == sorted(e.via), (got.spec.name, e, out)
            checked += 1
        for p in got.spec.paths:
            target = got.spec.host(p.target).address.split("/")[0]
            for router, link in zip(p.routers[:-1], p.links, strict=True):
                out = got.fib[f"{router} {target}"]
                assert f" dev {got.spec.link(link).end(router)[0]} " in out, (p, router, out)
                checked += 1
    specs = [got.spec for got in seen.values()]
    assert checked == sum(len(s.ecmp) + sum(len(p.links) for p in s.paths) for s in specs) >= 10


def test_the_sessions_answer_the_environments_reads_as_vtysh_does(seen):
    """RouterDaemons.answer (kept-open vty sessions) prints what vtysh prints."""
    answers = [a for got in seen.values() for a in got.answers]
    assert [a for a in answers if a[1] != a[2]] == []
    assert sum('"neighbors"' in a[1] for a in answers) >= 12
    assert sum('"peers"' in a[1] for a in answers) >= 6


def test_interfaces_carry_their_descriptions(seen):
    spec = seen["mesh"].spec
    first = spec.routers[0].name
    for x in spec.links_of(first):
        mine, _, peer, _ = x.end(first)
        line = next(ln for ln in seen["mesh"].aliases.splitlines() if f" {mine}@" in ln)
        assert f"alias {x.role.upper() + ' ' if x.role != 'primary' else ''}to {peer} " in line


def test_the_daemons_accept_every_configuration_shape_of_the_catalogue():
    require_emulator("mininet")  # root, for the jails and the network namespace
    missing = installed()
    require(missing is None, missing or "")
    specs = [build(f, s, v) for f in FAMILIES for s in SIZES for v in range(VARIANTS)]
    assert check_specs(specs) == {}
    wrong = {"bad": ("ospfd", "hostname x\nrouter ospf\n maximum-paths 100000\nexit\n")}
    assert "maximum-paths 100000" in " ".join(refusals(wrong)["bad"])
