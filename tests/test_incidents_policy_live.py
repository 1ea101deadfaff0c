"""The security policy's kinds live, on one large lab (leafspine-large-0: 14 routers, 32
hosts; the cheapest large lab), through the app's own Session and verdict.

One lab, one test: the healthy lab with the benign NOC exception meets its intent in full,
the policy's closed probes included (REJECT refuses them: a TCP reset, an ICMP port
unreachable); then each of the four kinds in turn, on a router the exception does not
hold: injected, the verdict sees exactly the probed router's closed flows open (TCP and
UDP; TCP alone for wrong_proto) and its filter changed, and no flow that must work lost
(silent: "everything pings" passes); its evidence shows through the agent's read-only
sandbox; its fix, sent through the agent's sandbox, brings every check back. Last, the
policy flushed from a few routers, the lab's reset restores it (a reused lab is proven
clean: a fresh session's golden reading is read from the lab itself, and its closed
probes would answer if the rules were not back).
"""

from __future__ import annotations

import random
import time

import pytest

from emulators.netcmd.sandbox import Status
from generators.incidents import daemons
from generators.incidents.faults import kinds as K
from generators.incidents.faults import security
from generators.incidents.faults.dphelp import argv
from generators.incidents.labs import ColdLab
from generators.incidents.reading import matches
from generators.incidents.session import Session
from generators.lab.frr.daemons import installed
from generators.netlab import build
from tests.conftest import require, require_emulator

KINDS = tuple(
    f"dataplane.mgmt_filter_{n}" for n in ("missing", "shadowed", "narrow", "wrong_proto")
)


@pytest.mark.integration
def test_the_security_policy_kinds_on_one_large_lab():
    require_emulator("mininet")
    require(installed() is None, installed() or "")
    require(daemons.installed() is None, daemons.installed() or "")
    spec = build("leafspine", "large", 0)
    taken = K.Taken()
    noc = K.kind("dataplane.noc_echo_allowed").draw(random.Random(0), spec, taken)
    taken.add(noc)
    timings: dict[str, float] = {}
    with ColdLab(spec, timeout_s=5.0, output_bytes=8192) as lab:
        started = time.perf_counter()
        session = Session(lab, [noc], [])
        healthy = session.start()  # Unhealthy if a closed probe answered
        timings["start"] = time.perf_counter() - started
        assert healthy.ok and len(session.checks.closed) == len(security.probes(spec)) > 0
        for kind in KINDS:
            started = time.perf_counter()
            fault = K.kind(kind).draw(random.Random(kind), spec, taken)
            assert fault is not None and fault.cause.device != noc.cause.device
            p = security.prober(spec, fault.cause.device)
            session.inject([fault])
            broken = session.after_change(before=healthy)
            protocols = ("tcp",) if kind.endswith("wrong_proto") else ("tcp", "udp")
            opened = {f"closed:{proto}:{p.host}>{p.router}" for proto in protocols}
            assert broken.violations == {*opened, f"intent:filter:{p.router}"}, kind
            assert broken.behavioural() == opened  # silent: no flow that must work is lost
            for evidence in fault.evidence:
                assert matches(lab, evidence), (kind, evidence)
            for machine, command in fault.fix:
                result = lab.sandbox_for(False).run(machine, command)
                assert result.status is Status.OK, (kind, command, result.output)
            fixed = session.after_change(before=broken)
            assert fixed.ok, (kind, sorted(fixed.violations))
            timings[kind] = time.perf_counter() - started
        started = time.perf_counter()
        flushed = [p.router for p in security.probers(spec)[:3]]
        for router in flushed:
            lab.apply(argv(router, "iptables -F INPUT"))
        lab.restore()
        clean = Session(lab, [], []).start()
        assert clean.ok
        shown = lab.shell({r: "iptables -S INPUT" for r in flushed})
        for router in flushed:
            assert [f"-A INPUT {r}" for r in security.RULES] == [
                line for line in shown[router][1].splitlines() if line.startswith("-A ")
            ]
        timings["restore"] = time.perf_counter() - started
    print({k: round(v, 1) for k, v in timings.items()})
