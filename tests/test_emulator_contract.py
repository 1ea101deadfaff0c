"""The emulator contract (emulators/base.py), run against every backend.

Each test takes `backend` (a name in emulators.base.EMULATORS) and a small lab: router
r0 between two domains, one host on each (plus a second host on s1). A backend that
cannot run here (no root, not installed) skips on a user's machine and fails in CI.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from emulators import state
from emulators.base import EMULATORS, Device, Interface, Lab
from emulators.netcmd.sandbox import CommandSandbox, Status
from emulators.probe import PROTOCOLS, Flow
from pipeline.errors import ConfigError, EnvironmentFailure
from tests import reset_families
from tests.conftest import integration_fixture, require_emulator

BACKENDS = EMULATORS.names()  # every backend emulators/ declares


def small_lab() -> Lab:
    def host(name: str, domain: str, addr: str, gw: str) -> Device:
        intf = Interface(f"{name}-eth0", domain, (addr,))
        return Device(name, (intf,), startup=(("ip", "route", "add", "default", "via", gw),))

    router = Device(
        "r0",
        (
            Interface("r0-eth1", "s1", ("10.0.1.1/24",)),
            Interface("r0-eth2", "s2", ("10.0.2.1/24",)),
        ),
        sysctls=(("net.ipv4.ip_forward", "1"),),
        role="router",
    )
    return Lab(
        "contract",
        (
            router,
            host("h1", "s1", "10.0.1.2/24", "10.0.1.1"),
            host("h3", "s1", "10.0.1.3/24", "10.0.1.1"),
            host("h2", "s2", "10.0.2.2/24", "10.0.2.1"),
        ),
    )


@pytest.fixture(params=BACKENDS)
@integration_fixture
def backend(request):
    require_emulator(request.param)
    return EMULATORS.load(request.param)


@pytest.fixture
def emu(backend):
    with backend() as emulator:
        emulator.build(small_lab())
        emulator.snapshot()
        yield emulator


def test_lab_model_validates_names_and_addresses():
    lab = small_lab()
    lab.validate()
    assert lab.domains == ("s1", "s2")
    assert lab.probed == ("r0", "h1", "h3", "h2")
    assert lab.probe_address("h2", "r0") == "10.0.2.1"  # the router on the source's subnet
    assert lab.probe_address("r0", "h2") == "10.0.2.2"
    bad = Lab("bad", (Device("r0", (Interface("r0-eth1", "s1", ("10.0.1.300/24",)),)),))
    with pytest.raises(ConfigError, match="r0 r0-eth1"):
        bad.validate()


def test_built_lab_is_fully_reachable(emu):
    reach = emu.reachability()
    assert reach.devices == ("r0", "h1", "h3", "h2")
    assert reach.full and reach.loss == 0.0
    assert "*** Results: 0% dropped (12/12 received)" in reach.render()


def test_probes_count_only_the_right_device_answering(emu):
    """A flow succeeds only when the target itself answers at the probed address: an alias
    of h2's address on h1's loopback answers h1's pings, and fails the flow."""
    flows = [Flow("h1", "h2", "10.0.2.2", p) for p in PROTOCOLS]
    assert all(emu.probe(flows).values())
    emu.run("h1", ["ip", "addr", "add", "10.0.2.2/32", "dev", "lo"], timeout_s=5, output_bytes=100)
    ping = emu.run("h1", ["ping", "-c", "1", "-W", "1", "10.0.2.2"], timeout_s=5, output_bytes=999)
    assert ping.exit_code == 0  # ping is fooled
    assert not any(emu.probe(flows).values())


def test_a_refusal_is_final_and_silence_is_asked_again(emu):
    emu.run("r0", ["iptables", "-A", "INPUT", "-p", "tcp", "-j", "REJECT"], timeout_s=5,
            output_bytes=100)  # fmt: skip
    emu.run("r0", ["iptables", "-A", "INPUT", "-p", "udp", "-j", "DROP"], timeout_s=5,
            output_bytes=100)  # fmt: skip
    tcp, udp = Flow("h1", "r0", "10.0.1.1", "tcp"), Flow("h1", "r0", "10.0.1.1", "udp")
    control = Flow("h1", "r0", "10.0.1.1", "icmp")
    assert emu.probe([tcp]) == {tcp: False} and emu.prober.rounds == [1]
    assert emu.probe([udp, control]) == {udp: False, control: True}
    assert emu.prober.rounds == [2, 2]  # asked again beside the answering control


def test_answers_that_arrive_while_the_prober_is_not_scheduled_count(emu, monkeypatch):
    """The wait is judged over only after reading what arrived meanwhile: a prober that was
    not scheduled for longer than its wait (as on a loaded machine) still sees the answers
    (fping processed its timeouts first and judged such pairs failed)."""
    from emulators import probe_round

    send = probe_round.Round._send

    def send_then_stall(self):
        send(self)
        time.sleep(0.5)  # ten times the wait below

    monkeypatch.setattr(probe_round.Round, "_send", send_then_stall)
    emu.prober.timeout_s = 0.05
    flows = [Flow(s, t, emu.lab.probe_address(s, t), p)
             for s in ("h1", "h2") for t in ("r0", "h3") for p in PROTOCOLS]  # fmt: skip
    assert all(emu.probe(flows).values())
    assert emu.prober.rounds == [len(flows)]


def test_run_is_argv_without_a_shell(emu):
    result = emu.run("h1", ["echo", "$HOME;", "`id`", "|x"], timeout_s=5, output_bytes=1000)
    assert result.exit_code == 0 and result.output == "$HOME; `id` |x\n"
    failed = emu.run("r0", ["ip", "route", "del", "10.9.9.0/24"], timeout_s=5, output_bytes=1000)
    assert failed.exit_code not in (0, None) and failed.output


def test_run_stops_at_the_timeout_and_the_output_cap(emu):
    slow = emu.run("h1", ["sleep", "30"], timeout_s=0.5, output_bytes=1000)
    assert slow.timed_out and slow.exit_code is None and slow.exec_s < 3
    big = emu.run("h1", ["cat", "/dev/zero"], timeout_s=5, output_bytes=4096)
    assert big.truncated and big.exit_code is None and len(big.output) == 4096


def test_run_on_an_unknown_device_is_an_environment_failure(emu):
    with pytest.raises(EnvironmentFailure, match="no device 's1'"):
        emu.run("s1", ["true"], timeout_s=1, output_bytes=100)


def test_commands_act_only_on_their_device(emu):
    emu.run("h1", ["ip", "link", "set", "h1-eth0", "down"], timeout_s=5, output_bytes=1000)
    reach = emu.reachability()
    assert not reach.full
    assert {s for s, t in reach.failed} | {t for s, t in reach.failed} == {"r0", "h1", "h3", "h2"}
    assert all("h1" in pair for pair in reach.failed)


def _state(emu, device: str) -> dict[str, str]:
    views = {
        "addr": ["ip", "-4", "-o", "addr"],
        "route": ["ip", "-4", "route", "show", "table", "all"],
        "rule": ["ip", "-4", "rule"],
        "link": ["ip", "-o", "link"],
        "qdisc": ["tc", "qdisc"],
        "fwd": ["sysctl", "net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter"],
        "ipt": ["iptables", "-S"],
    }
    return {k: emu.run(device, v, timeout_s=5, output_bytes=65536).output for k, v in views.items()}


def test_reset_restores_every_kind_of_state_and_verifies_it(emu):
    before = {d: _state(emu, d) for d in ("r0", "h1")}
    breakage = {
        "r0": [
            ["ip", "addr", "flush", "dev", "r0-eth1"],
            ["ip", "addr", "add", "10.77.0.1/16", "dev", "r0-eth2"],
            ["ip", "link", "set", "r0-eth2", "mtu", "70"],
            ["ip", "route", "add", "10.50.0.0/16", "via", "10.0.2.2"],
            ["ip", "rule", "add", "pref", "100", "prohibit"],
            ["iptables", "-t", "nat", "-A", "POSTROUTING", "-j", "MASQUERADE"],
            ["iptables", "-P", "FORWARD", "DROP"],
            ["iptables", "-N", "agentchain"],
            ["iptables", "-A", "agentchain", "-p", "icmp", "-j", "DROP"],
            ["iptables", "-I", "INPUT", "-j", "agentchain"],
            ["ip", "route", "add", "10.60.0.0/16", "dev", "r0-eth1", "table", "100"],
            ["ip", "rule", "add", "pref", "200", "from", "10.0.2.0/24", "lookup", "100"],
            ["ip", "link", "set", "lo", "down"],
            ["sysctl", "-w", "net.ipv4.ip_forward=0", "net.ipv4.conf.all.rp_filter=2"],
            shlex.split("tc qdisc add dev r0-eth2 root tbf rate 1mbit burst 64 latency 50ms"),
        ],
        "h1": [
            ["ip", "link", "set", "h1-eth0", "down"],
            ["ip", "neigh", "add", "10.0.1.9", "lladdr", "00:11:22:33:44:55", "dev", "h1-eth0"],
        ],
    }
    for device, argvs in breakage.items():
        for argv in argvs:
            result = emu.run(device, argv, timeout_s=5, output_bytes=4096)
            assert result.exit_code == 0, (argv, result.output)
    assert emu.reachability().loss > 0.5
    seconds = emu.reset()
    assert 0 < seconds < 5
    assert emu.reachability().full
    assert _settled(lambda: {d: _state(emu, d) for d in ("r0", "h1")}, before) == before
    assert "10.0.1.9" not in emu.run("h1", ["ip", "neigh"], timeout_s=5, output_bytes=4096).output


def _settled(view, expected, timeout_s: float = 5.0):
    """`view()` once it equals `expected`, or as it is after `timeout_s`. What ip prints of
    a link brought up (its operstate, its routes' `linkdown`) follows the carrier a moment
    later (the kernel's linkwatch batches those events for up to a second; traffic flows at
    once), so a view taken right after a reset may still show the link going up."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = view()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _full_view(emu, device: str) -> dict[str, str]:
    """A device's state as the tools print it (independent of emulators/state.py's dump):
    every attribute an allowed command can change, with lifetimes and flags."""
    views = {
        "link": ["ip", "-d", "-o", "link"],
        "addr": ["ip", "-d", "-o", "addr"],  # both families
        "route": ["ip", "-4", "-d", "route", "show", "table", "all"],
        "route6": ["ip", "-6", "-d", "route", "show", "table", "all"],
        "rule": ["ip", "-4", "rule"],
        "rule6": ["ip", "-6", "rule"],
        "neigh": ["ip", "neigh", "show", "proxy"],
        "permanent": ["ip", "neigh", "show", "nud", "permanent"],
        "noarp": ["ip", "neigh", "show", "nud", "noarp"],
        "qdisc": ["tc", "qdisc", "show"],
        "ipt": ["iptables-save"],
        "sysctl": ["grep", "-r", ".", "/proc/sys/net"],
    }
    out = {}
    for key, argv in views.items():
        text = emu.run(device, argv, timeout_s=10, output_bytes=1 << 20).output
        # iproute2 also prints "Error: Peer netns reference is invalid." for a veth whose
        # peer lives in a namespace this one has no id for: noise on stderr, not state.
        lines = [ln for ln in text.splitlines() if not ln.startswith(("#", "Error: Peer"))]
        if key == "ipt":
            lines = [state._COUNTERS.sub("", ln) for ln in lines]
        if key == "sysctl":
            lines = [ln for ln in lines if not re.search(state.VOLATILE, ln)]
        if key == "noarp":  # the kernel's own, for multicast and broadcast, come and go
            lines = [ln for ln in lines if not re.search(r"lladdr (01:00:5e|33:33|ff:ff)", ln)]
        out[key] = "\n".join(lines)
    return out


def test_reset_undoes_every_allowed_command_family(emu):
    """Each family of state-changing command the grammar allows (tests/reset_families.py),
    sent as an agent sends it, plus state only the environment could leave (lifetimes,
    aliases, temporary entries): after the reset every attribute is as before and the next
    episode starts clean, ICMP, TCP and UDP between every pair."""
    assert reset_families.covered() == []
    devices = ("r0", "h1", "h3", "h2")
    before = {d: _full_view(emu, d) for d in devices}
    sandbox = CommandSandbox(emu, devices, timeout_s=10)
    for device, command in reset_families.FAMILIES:
        result = sandbox.run(device, command)
        assert result.status is Status.OK, (device, command, result.output)
    for device, command in reset_families.LEAKY:
        result = emu.run(device, command.split(), timeout_s=10, output_bytes=4096)
        assert result.exit_code == 0, (device, command, result.output)
    assert {d: _full_view(emu, d) for d in devices} != before
    assert emu.reachability().loss > 0.5
    emu.reset()
    after = _settled(lambda: {d: _full_view(emu, d) for d in devices}, before)
    for device in devices:
        for key, text in before[device].items():
            assert after[device][key] == text, (device, key)
    flows = [
        Flow(s, t, emu.lab.probe_address(s, t), p)
        for s in devices
        for t in devices
        if s != t
        for p in PROTOCOLS
    ]
    assert all(emu.probe(flows).values())


def test_instances_are_independent(backend):
    with backend() as one, backend() as two:
        assert one.prefix != two.prefix
        one.build(small_lab())
        two.build(small_lab())
        one.run("r0", ["sysctl", "-qw", "net.ipv4.ip_forward=0"], timeout_s=5, output_bytes=100)
        assert not one.reachability().full
        assert two.reachability().full


def test_stop_leaves_nothing_and_is_idempotent(backend):
    with backend() as emulator:
        emulator.build(small_lab())
        prefix = emulator.prefix
        assert backend.leftovers(prefix)  # while running, its processes exist
    assert backend.leftovers(prefix) == []
    emulator.stop()


HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from emulators.base import EMULATORS
    from tests.test_emulator_contract import small_lab
    emu = EMULATORS.load(sys.argv[1])().__enter__()
    emu.build(small_lab())
    print(json.dumps({"prefix": emu.prefix}), flush=True)
    time.sleep(300)
    """
)


def test_kill_9_leftovers_are_removed_by_the_next_cleanup(backend):
    name = next(n for n in BACKENDS if EMULATORS.load(n) is backend)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, name],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        prefix = json.loads(proc.stdout.readline())["prefix"]
        assert backend.leftovers(prefix)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    removed: list[str] = []
    deadline = time.monotonic() + 10
    while True:  # the kernel drops a dead holder's lock at once; its processes may linger
        removed += backend.cleanup_stale()
        if not backend.leftovers(prefix) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert backend.leftovers(prefix) == []
    assert any(line.startswith(prefix) for line in removed)


def test_a_send_the_kernel_could_not_make_is_silence_not_a_refusal(emu, monkeypatch):
    """A send that fails for want of kernel memory (ENOBUFS: the machine-wide neighbour
    table is full) was never sent: the flow is asked again, not judged refused. And while the
    table overflows, no round confirms a silent flow: rounds go on until one passes clean."""
    import errno
    import socket as sockets

    from emulators import probe, probe_round

    real, failed = sockets.socket.sendto, []

    def full_once(self, *args):
        if not failed:
            failed.append(1)
            raise OSError(errno.ENOBUFS, "No buffer space available")
        return real(self, *args)

    monkeypatch.setattr(probe_round.socket.socket, "sendto", full_once)
    flow = Flow("h1", "h2", "10.0.2.2")
    assert emu.probe([flow]) == {flow: True} and failed and emu.prober.rounds == [1, 1]
    monkeypatch.setattr(probe_round.socket.socket, "sendto", real)
    counts = iter([0, 1, 1, 2, 2, 3, *[3] * 20])  # it overflows during the first three rounds
    monkeypatch.setattr(probe, "table_fulls", lambda: next(counts))
    emu.run("r0", ["iptables", "-A", "INPUT", "-p", "udp", "-j", "DROP"], timeout_s=5,
            output_bytes=100)  # fmt: skip
    silent, control = Flow("h1", "r0", "10.0.1.1", "udp"), Flow("h1", "r0", "10.0.1.1")
    assert emu.probe([silent, control]) == {silent: False, control: True}
    assert len(emu.prober.rounds) == 3 + 1  # three crowded rounds, then a clean one
