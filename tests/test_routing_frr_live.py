"""Routing levels 4-5 on live FRR labs: the oracle repairs an L4 and an L5 network, the
null agent does not, a repair by static routes that leaves the protocols broken is wrong
(issue 26), and hostile vtysh use cannot reach files, the host or other labs.

Queries are drawn (seeded, knob-selected quick faults) and built without the generator's
validation, which the `routing_levels` bench runs at scale: these tests take about 3
minutes on two cores (the static-route repairs about 75 s of it). One environment serves
every test (one lab per level).
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from pathlib import Path

import pytest

from emulators.netcmd import vtysh
from emulators.netcmd.sandbox import Status
from generators.routing.app import RoutingApp
from generators.routing.config import RoutingConfig
from generators.routing.frr.daemons import installed
from generators.routing.frr.generator import draw
from generators.routing.frr.topology import FrrTopology
from generators.routing.generator import RoutingQueryGenerator
from pipeline.core import Outcome, Query, StepStatus
from tests.conftest import integration_fixture, require, require_root

pytestmark = pytest.mark.integration

QUICK = {  # faults whose effect is immediate (no dead interval to wait out)
    4: ["ospf_area", "ospf_network"],
    5: ["ospf_network", "bgp_remote_as", "drop_traffic"],
}


def _query(level: int) -> Query:
    cfg = RoutingConfig(faults=QUICK[level], size="small")
    topo, faults = draw(cfg, level, random.Random(f"live:{level}"))
    oracle = [{"machine": m, "command": c} for f in faults for m, c in f.fix]
    return RoutingQueryGenerator(cfg)._frr_query(level, 0, 0, topo, faults, oracle)


@pytest.fixture(scope="module")
@integration_fixture
def app() -> RoutingApp:
    require_root("routing levels 4-5 need root (Mininet and FRR)")
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        require(False, "Mininet is not installed (scripts/setup.d/20-mininet.sh)")
    missing = installed()
    require(missing is None, missing or "")
    return RoutingApp(RoutingConfig())


@pytest.fixture(scope="module")
def env(app):
    with app.environment() as environment:
        yield environment


def play(app: RoutingApp, env, query: Query, agent: str):
    steps = []
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            reply = app.oracle_reply(query, turn, observation) if agent == "oracle" else ""
            result = episode.step(reply)
            steps.append(result)
            if result.done:
                break
            observation = result.output
    return observation, steps, app.score(query, steps)


@pytest.mark.parametrize("level", [4, 5])
def test_oracle_repairs_null_does_not(app, env, level):
    query = _query(level)
    _, steps, verdict = play(app, env, query, "oracle")
    assert verdict.outcome is Outcome.CORRECT and verdict.safe, (verdict, steps[-1].output)
    assert len(steps) == len(query.ground_truth["oracle"])
    assert all(s.evidence["sandbox"] == "ok" for s in steps)
    _, steps, verdict = play(app, env, query, "null")
    assert not verdict.correct and verdict.safe
    assert verdict.detail["final_loss"] > 0
    if level == 5:  # the top level tells how many pairs fail, not which
        assert "required host pairs work" in steps[0].output and "h1 ->" not in steps[0].output


def static_repair(topo: FrrTopology) -> list[str]:
    """`ip route add` commands written from the prompt's topology table, no diagnosis: each
    router reaches every other LAN through the next router towards it (one covering route
    for the far side, the LANs of the other side one by one)."""
    out = []
    for i in topo.rs:
        left = [] if i == 1 else [(j, topo.link_addr(i - 1, 1)) for j in range(1, i)]
        right = [] if i == topo.routers else [(j, topo.link_addr(i, 2)) for j in topo.rs if j > i]
        cover, one_by_one = (right, left) if len(left) <= len(right) else (left, right)
        if cover:
            out.append((f"r{i}", f"ip route add 10.0.0.0/16 via {cover[0][1]}"))
        out += [(f"r{i}", f"ip route add {topo.lan(j)} via {via}") for j, via in one_by_one]
    return [json.dumps({"machine": m, "command": c}) for m, c in out]


@pytest.mark.parametrize("level", [4, 5])
def test_static_routes_that_carry_the_traffic_are_no_repair(app, env, level):
    """The issue's repairs: at L4 static routes with the area mismatch left broken, at L5
    static routes plus removing the drop with the eBGP session down. Every host reaches every
    other (the old verdict said correct), the routing protocols do not carry it: wrong."""
    query = _query(level)
    topo = FrrTopology.from_name(query.env_key)
    replies = static_repair(topo)
    drop = [f for f in query.ground_truth["faults"] if f["type"] == "drop_traffic"]
    replies += [json.dumps(fix) for f in drop for fix in f["fix"]]
    assert len(replies) <= app.cfg.max_turns
    steps = []
    with env.episode(query) as episode:
        episode.observe()
        for reply in replies:
            steps.append(episode.step(reply))
    verdict = app.score(query, steps)
    assert all(s.status.value == "ok" for s in steps), [(s.status, s.output[:300]) for s in steps]
    assert verdict.detail["final_loss"] == 0 and verdict.detail["final_failing"] == {}
    assert verdict.outcome is Outcome.WRONG and verdict.safe, verdict
    assert "routing protocols do not carry it" in verdict.error
    assert "routing protocols of the network described" in steps[-1].output
    assert not steps[-1].done
    gaps = " | ".join(verdict.detail["intent"])
    if level == 4:  # the area mismatch of the query: no Full adjacency on that link
        assert "no Full adjacency in area 0.0.0.0" in gaps
    else:
        assert "no Established session" in gaps or "kernel route" in gaps


def _lab(env, level: int):
    topo = FrrTopology.from_name(_query(level).env_key)
    return env.frr_pool.get(topo, fresh=False)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def _host_vtysh(daemons, router: str, *lines: str) -> str:
    argv = ["vtysh", "-H", "/dev/null", "--vty_socket", str(daemons.vty_dir(router))]
    for line in lines:
        argv += ["-c", line]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    return done.stdout + done.stderr


def test_hostile_vtysh_reaches_no_file_host_or_other_lab(env):
    lab4, lab5 = _lab(env, 4), _lab(env, 5)
    sandbox, daemons = lab4.sandbox, lab4.daemons
    host_etc = _digest(Path("/etc/frr"))
    evil = Path("/tmp/ng-frr-evil.log")
    evil.unlink(missing_ok=True)
    # Through the sandbox: refused by the grammar before anything runs.
    for command in (
        f"vtysh -c 'configure terminal' -c 'log file {evil}'",
        "vtysh -f /etc/shadow",
        f"vtysh --vty_socket {lab5.daemons.vty_dir('r1')} -c 'show version'",
        "vtysh -c 'start-shell'",
        "vtysh -c 'configure terminal' -c 'banner motd file /etc/shadow'",
    ):
        assert sandbox.run("r1", command).status is Status.REJECTED, command
    assert sandbox.run("h1", "vtysh -c 'show version'").status is Status.REJECTED
    # `write memory` is allowed: it lands in the router's own folder, never in /etc/frr.
    saved = sandbox.run("r1", "vtysh -c 'write memory'")
    assert saved.status is Status.OK and "/etc/frr/ospfd.conf" in saved.output
    assert (daemons.root("r1") / "etc" / "ospfd.conf.sav").exists()  # the previous one, kept
    # Past the grammar (trusted vtysh, as if it had let them through): the daemons' jail.
    out = _host_vtysh(daemons, "r1", "configure terminal", f"log file {evil}")
    assert "can't open logfile" in out and not evil.exists()
    out = _host_vtysh(daemons, "r1", "configure terminal", "banner motd file /etc/shadow")
    assert "root:" not in out
    assert "root:" not in daemons.vtysh("r1", ["show running-config"])
    assert _digest(Path("/etc/frr")) == host_etc
    # The agent's vtysh jail, told another lab's socket path, finds nothing there; no shell.
    other = str(lab5.daemons.vty_dir("r1"))
    for inner in (
        ["/usr/bin/vtysh", "--vty_socket", other, "-c", "show version"],
        ["/usr/bin/vtysh", "--vty_socket", vtysh.VTY_DIR, "-c", "start-shell"],
        ["/bin/cat", "/etc/shadow"],
    ):
        jail = vtysh.jail("/usr/bin/vtysh", str(daemons.root("r1"))).argv(inner)
        result = lab4.emu.run("r1", jail, timeout_s=5, output_bytes=4096)
        assert result.exit_code != 0 and "root:" not in result.output, (inner, result.output)
    mine = sandbox.run("r2", "vtysh -c 'show running-config'")
    assert mine.status is Status.OK and "hostname r2" in mine.output
    assert mine.output.count("hostname ") == 1  # vtysh's own host name is the router's


def test_a_byte_bgpd_holds_breaks_no_read_of_a_step(env):
    """Issue 26, routing L5: `neighbor ... description X\\udcff` stored 0xFF in bgpd, and the
    environment's own `show bgp summary json` read raised UnicodeDecodeError out of the
    step. The agent's surrogate is refused before vtysh runs; a byte stored by a trusted
    write is read back as U+FFFD."""
    query = _query(5)
    topo = FrrTopology.from_name(query.env_key)
    border = topo.borders[0]
    router, peer = topo.router(border), topo.bgp_peer(border)
    lines = ["configure terminal", f"router bgp {topo.asn(border)}"]
    with env.episode(query) as episode:
        lab = _lab(env, 5)
        said = " ".join(f"-c '{line}'" for line in [*lines, f"neighbor {peer} description X"])
        command = f"vtysh {said[:-1]}\ud800'"
        step = episode.step(json.dumps({"machine": router, "command": command}))
        assert step.status is StepStatus.BLOCKED and "lone surrogate" in step.error
        lab.daemons.vtysh(router, [*lines, f"neighbor {peer} description X\udcff"])
        assert "X\ufffd" in lab.daemons.vtysh(router, ["show bgp summary json"])
        step = episode.step(json.dumps({"machine": router, "command": "ip link set dev lo up"}))
        assert step.status is StepStatus.OK, step.error  # after_change read bgpd's summary


def test_hostile_replies_leave_the_frr_labs_typed_and_usable(app, env):
    """The reply fuzzer's CI share of routing levels 4 and 5 (tests/test_fuzz.py has the
    other apps', and the doors of this reply format), on this module's live labs: vtysh -c
    lines and kernel tools mutated; no finding (pipeline/fuzz/)."""
    from generators.benches.fuzz import LAB_CORPUS, VTYSH_CORPUS
    from pipeline.fuzz.harness import Target
    from pipeline.fuzz.run import fuzz_app
    from tests.test_fuzz import SEED, report

    queries = [_query(4), _query(5)]
    target = Target("routing L45", app, queries, "command", VTYSH_CORPUS + LAB_CORPUS[:6], False)
    run = fuzz_app(target, 8, 0, SEED, env=env)
    assert run.findings == [], report(run)
    assert run.tally.tried == 8
