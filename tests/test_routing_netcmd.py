"""The command sandbox: the policy on its own, then hostile commands on a real network.

The hostile list goes through a live routing episode as agent replies: every command
must come back as a rejected (blocked) step with its reason, nothing may run, and the
host (files, processes, root namespace, kernel settings) must be unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from emulators.netcmd.policy import check
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.faults import Fault
from generators.routing.prompt import build_prompt
from generators.routing.topology import RoutingTopology
from pipeline.core import Query, StepStatus
from tests.conftest import require_root

ALLOWED = [
    ("ip addr", ("/usr/sbin/ip", "addr")),
    ("sudo ip -br a s", ("/usr/sbin/ip", "-br", "a", "s")),
    ("ip route add 10.0.2.0/24 via 10.0.1.2 dev r0-eth1", None),
    ("ip ro get 10.0.2.2", None),
    ("ip rule del pref 100", None),
    ("ip neigh flush all", None),
    ("ip link set dev r0-eth1 mtu 1500 up", None),
    ("/usr/sbin/ip link show", None),
    ("ifconfig r0-eth1 10.0.1.1 netmask 255.255.255.0 up", None),
    ("route -n", None),
    ("route add -net 10.0.3.0 netmask 255.255.255.0 gw 10.0.1.2", None),
    ("arp -n", None),
    ("arp -s 10.0.1.2 00:11:22:33:44:55", None),
    ("iptables -L FORWARD -n -v", None),
    ("iptables -t nat -S", None),
    ("iptables -D FORWARD -p icmp -s 10.0.3.0/24 -j DROP", None),
    ("iptables -A INPUT ! -s 10.0.1.0/24 -j ACCEPT", None),
    ("iptables-save -t filter", None),
    ("tc qdisc del dev r0-eth2 root", None),
    ("tc -s qdisc show dev r0-eth2", None),
    ("sysctl net.ipv4.ip_forward", None),
    ("sysctl -w net.ipv4.conf.r0-eth1.forwarding=1", None),
    ("sysctl net/ipv4/ip_forward=1", None),
    ("cat /proc/sys/net/ipv4/ip_forward", ("/usr/bin/cat", "/proc/sys/net/ipv4/ip_forward")),
    ("cat /proc/net/route", None),
    ("ping -c 3 -W 1 10.0.2.2", None),
    ("ping -c2 10.0.2.2", None),
    ("ip route flush cache", None),
    # `link` is a scope here, not an abbreviation of link-netns (a CI failure once)
    ("ip route replace 10.0.4.0/24 dev r0-eth4 proto kernel scope link src 10.0.4.1", None),
    ("ip addr add 10.0.9.1/24 dev r0-eth1 scope link", None),
    ("ip -f link neigh show", None),
]


@pytest.mark.parametrize(("command", "argv"), ALLOWED)
def test_network_commands_are_allowed(command, argv):
    checked = check(command)
    assert checked.allowed, checked.reason
    assert checked.argv[0].startswith("/") and os.path.basename(checked.argv[0]) in (
        command.split()[1] if command.startswith("sudo") else command.split()[0].rsplit("/")[-1]
    )
    if argv is not None:
        assert checked.argv == argv


# (command, a fragment of the reason the agent is shown)
HOSTILE = [
    ("echo pwned > /tmp/ngr-hostile-1", "redirection"),
    ("tee /tmp/ngr-hostile-2", "not an allowed tool"),
    ("touch /tmp/ngr-hostile-3", "not an allowed tool"),
    ("cp /etc/passwd /tmp/ngr-hostile-4", "not an allowed tool"),
    ("dd if=/dev/zero of=/tmp/ngr-hostile-5 bs=1M count=1", "not an allowed tool"),
    ("iptables-save -f /tmp/ngr-hostile-6", "writing them to a file is not allowed"),
    ("ip addr > /tmp/ngr-hostile-7", "redirection"),
    ("sysctl -p /etc/sysctl.conf", "reads settings from a file"),
    ("arp -f /etc/ethers", "reads a file"),
    ("ip -batch /tmp/ngr-hostile-batch", "(-batch) is not allowed"),
    ("kill -9 1", "not an allowed tool"),
    ("pkill -f mininet", "not an allowed tool"),
    ("killall bash", "not an allowed tool"),
    ("reboot", "not an allowed tool"),
    ("shutdown -h now", "not an allowed tool"),
    ("systemctl poweroff", "not an allowed tool"),
    ("ip netns exec other ip link", "'ip netns' (netns) is not allowed"),
    ("nsenter -t 1 -n ip link", "not an allowed tool"),
    ("ip -n root link", "-n (-netns) is not allowed"),
    ("ip -all netns exec ip link", "(-all) is not allowed"),
    ("ip link set r0-eth1 netns 1", "'ip link set ... netns' is not allowed"),
    ("unshare -n bash", "not an allowed tool"),
    ("ip link add evil type veth peer name evil2", "'ip link add' (add) is not allowed"),
    ("sysctl -w kernel.panic=1", "net.* keys"),
    ("sysctl -w kernel.sysrq=1", "net.* keys"),
    ("sysctl -w net.ipv4.ip_forward=1 vm.drop_caches=3", "net.* keys"),
    ("sysctl -w net.ipv4.../kernel.panic=1", "net.* keys"),
    ("cat /proc/sys/kernel/hostname", "only read files under /proc/sys/net/"),
    ("cat /proc/sys/net/../../../etc/shadow", "only read files under /proc/sys/net/"),
    (":(){ :|:& };:", "pipe"),
    ("bash -c ':(){ :|:& };:'", "pipe"),
    ("python3 -c \"[__import__('os').fork() for _ in range(99)]\"", "not an allowed tool"),
    ("sleep 3600", "not an allowed tool"),
    ("ping 10.0.1.2", "needs a count"),
    ("ping -c 5 -i 0.001 10.0.1.2", "between 0.2 and 1"),
    ("ping -f -c 5 10.0.1.2", "not allowed"),
    ("ip monitor", "'ip monitor' (monitor) is not allowed"),
    ("tc monitor", "'tc monitor' is not allowed"),
    ("tc exec bpf import /tmp/x", "'tc exec' is not allowed"),
    ("cat /dev/zero", "only read files under /proc/sys/net/"),
    ("yes", "not an allowed tool"),
    ("seq 1 100000000", "not an allowed tool"),
    ("ip addr; rm -rf /", "command list"),
    ("ip route && reboot", "&"),
    ("ip addr | nc 10.0.1.2 80", "pipe"),
    ("ip link set $(whoami) up", "substitution"),
    ("ip link set `id` up", "command substitution"),
    ("ip addr\nreboot", "more than one line"),
    ("apt-get install -y nmap", "not an allowed tool"),
    ("pip install requests", "not an allowed tool"),
    ("sudo -u nobody ip addr", "sudo options"),
    ("/tmp/ip addr", "not an allowed tool"),
    ("env PATH=/tmp ip addr", "not an allowed tool"),
    ("iptables --modprobe=/tmp/evil -L", "--modprobe"),
    ("sh -c 'ip addr'", "not an allowed tool"),
    ("mount -t tmpfs none /mnt", "not an allowed tool"),
    ("chmod 777 /etc/shadow", "not an allowed tool"),
    ("cat /etc/shadow", "only read files under /proc/sys/net/"),
    ("ip addr 'unbalanced", "cannot be split"),
]


@pytest.mark.parametrize(("command", "fragment"), HOSTILE)
def test_hostile_commands_are_refused_with_a_reason(command, fragment):
    checked = check(command)
    assert not checked.allowed and checked.argv == ()
    assert fragment in checked.reason


def _host_view() -> dict[str, object]:
    """What a hostile command could have changed on the host (all read-only)."""

    def out(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout

    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            procs.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return {
        "files": sorted(str(p) for p in Path("/tmp").glob("ngr-hostile-*")),
        # others' tests may add interfaces at the same time; a lab's names must never appear
        "lab links": sorted(n for n in os.listdir("/sys/class/net") if "-eth" in n),
        "netns": sorted(n for n in out("ip", "netns", "list").split() if n.startswith("ngr")),
        "sysctl": out("sysctl", "kernel.panic", "kernel.sysrq", "kernel.hostname"),
        "rules": out("iptables", "-S"),
        "hostile processes": [p for p in procs if p.startswith(("sleep 3600", "yes", "seq 1 "))],
    }


def _query(topo: RoutingTopology) -> Query:
    fault = Fault(
        "disable_routing",
        "ip_forward",
        "r0 has IP forwarding off",
        (("r0", ("sysctl", "-qw", "net.ipv4.ip_forward=0")),),
        (("r0", "sysctl -w net.ipv4.ip_forward=1"),),
    )
    truth = {"faults": [fault.to_json()], "oracle": [{"machine": "r0", "command": fault.fix[0][1]}]}
    prompt = build_prompt(topo, 100)
    return Query(
        "routing-L1-s0-99999",
        "routing",
        1,
        0,
        99999,
        prompt,
        "reachability",
        "disable_routing",
        truth,
        topo.name,
    )


@pytest.mark.integration
def test_hostile_replies_are_rejected_steps_and_change_nothing():
    require_root("the routing sandbox test needs root (Mininet)")
    topo = RoutingTopology(2, 1)
    host_before = _host_view()
    cfg = RoutingConfig(max_turns=len(HOSTILE) + 2)
    with RoutingEnvironment(cfg) as env, env.episode(_query(topo)) as episode:
        first = episode.observe()
        assert "X" in first
        for number, (command, fragment) in enumerate(HOSTILE, 1):
            machine = "h1_1" if number % 3 else "r0"
            result = episode.step(json.dumps({"machine": machine, "command": command}))
            assert result.status is StepStatus.BLOCKED, command
            assert fragment in result.error and fragment in result.output
            assert result.evidence["sandbox"] == "rejected" and result.evidence["argv"] == []
            assert result.evidence["before"] == result.evidence["after"]
            assert not result.done
        switch = episode.step(json.dumps({"machine": "s1", "command": "ip addr"}))
        assert switch.status is StepStatus.BLOCKED and "switch" in switch.error
        unknown = episode.step('{"machine": "nowhere", "command": "ip addr"}')
        assert unknown.status is StepStatus.BLOCKED and "no machine 'nowhere'" in unknown.error
    assert _host_view() == host_before
