"""The incidents tools' grammars, hostile: traceroute, tracepath, dig, bridge, ping -M,
ip link set master/nomaster/alias, svcctl and the read-only gate (emulators/netcmd/).

Each refused spelling names why; each allowed one is read as the real tool reads it: the
last test runs the real traceroute, tracepath, dig and bridge in a throwaway network
namespace on the spellings the grammar allows and on ones it refuses for the tool's own
reasons, and compares.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from emulators.netcmd import policy, readonly, servicegate, svcctl
from emulators.netcmd.sandbox import SandboxResult, Status
from emulators.netcmd.servicegate import ServiceGate
from generators.incidents import daemons
from generators.incidents.daemons import Daemon
from generators.incidents.svcconf import DNSMASQ_FIXED, Config
from tests.conftest import require_root

REFUSED = [
    # traceroute: CLIF's own parsing, then what is allowed
    ("traceroute -A 10.0.0.1", "whois server outside the lab"),
    ("traceroute --as-path-lookups 10.0.0.1", "whois server outside the lab"),
    ("traceroute -g 10.0.0.2 10.0.0.1", "source routes"),
    ("traceroute -M tcpconn 10.0.0.1", "modules are not allowed"),
    ("traceroute -O info 10.0.0.1", "module options"),
    ("traceroute --max=2 10.0.0.1", "Bad option"),  # CLIF spells long options in full
    ("traceroute --queries 1 10.0.0.1", "requires an argument"),  # only --queries=1
    ("traceroute -nq1 10.0.0.1", "requires an argument"),  # a value only to a token's first
    ("traceroute -q1n 10.0.0.1", "needs a number"),  # -q takes "1n"
    ("traceroute -m 99 10.0.0.1", "between 1 and 30"),
    ("traceroute -w 60 10.0.0.1", "between 0.1 and 3"),
    ("traceroute -n 10.0.0.0/24", "one IPv4 address"),
    ("traceroute -n example.org", "one IPv4 address"),
    ("traceroute -n 10.0.0.1 99999", "packet length"),
    ("traceroute -6 10.0.0.1", "IPv4 only"),
    ("traceroute -s 10.9.9.9 10.0.0.1", "the machine's own"),
    ("traceroute -i eth0/x 10.0.0.1", "interface name"),
    # tracepath: getopt
    ("tracepath -l 99999 10.0.0.1", "between 28 and 9000"),
    ("tracepath -n", "exactly one IPv4 address"),
    ("tracepath -nx 10.0.0.1", "invalid option"),
    ("tracepath -V 10.0.0.1", "is not allowed"),
    # dig
    ("dig x.lab", "exactly one @SERVER"),
    ("dig @10.0.0.1 @10.0.0.2 x.lab", "exactly one @SERVER"),
    ("dig @resolver x.lab", "IPv4 address"),
    ("dig @10.0.0.1 x.lab +trace", "root servers"),
    ("dig @10.0.0.1 x.lab +tra", "root servers"),  # the unique prefix of trace
    ("dig @10.0.0.1 x.lab +nssearch", "outside the lab"),
    ("dig @10.0.0.1 x.lab +https", "only UDP and TCP"),
    ("dig @10.0.0.1 x.lab +sh", "not a unique dig option"),
    ("dig @10.0.0.1 x.lab +time=60", "from 1 to 3"),
    ("dig @10.0.0.1 x.lab +short=1", "takes no value"),
    ("dig @10.0.0.1 -f /etc/passwd", "reads queries from a file"),
    ("dig @10.0.0.1 -4f/etc/passwd", "reads queries from a file"),  # clustered
    ("dig @10.0.0.1 -k /etc/key x.lab", "key file"),
    ("dig @10.0.0.1 -y hmac:k:s x.lab", "TSIG"),
    ("dig @10.0.0.1 -b 10.0.0.9 x.lab", "the machine's own"),
    ("dig @10.0.0.1 -t AXFR lab", "dig -t takes one of"),
    ("dig @10.0.0.1 -tAXFR lab", "dig -t takes one of"),
    ("dig @10.0.0.1 -x 10.0.0.0/8", "IPv4 address"),
    ("dig @10.0.0.1 x/../y", "not a domain name"),
    # bridge: iproute2's matches(), only the listings
    ("bridge l s dev acc1-eth0 learning off", "(set) is not allowed"),
    ("bridge link set dev acc1-eth0 flood off", "(set) is not allowed"),
    ("bridge f a 02:00:00:00:00:01 dev acc1-eth0", "(add) is not allowed"),
    ("bridge fdb flush dev acc1-eth0", "(flush) is not allowed"),
    ("bridge vlan add vid 10 dev acc1-eth0", "(vlan) is not allowed"),
    ("bridge monitor", "(monitor) is not allowed"),
    ("bridge -n x link show", "(-netns) is not allowed"),
    ("bridge -netns x link", "(-netns) is not allowed"),
    ("bridge -b /etc/passwd", "(-batch) is not allowed"),
    ("bridge -force fdb show", "(-force) is not allowed"),
    ("bridge link show dev", "is not allowed"),
    ("bridge fdb show dev acc1-eth0 self extra", "is not allowed"),
    # ping -M, ip link set master/nomaster/alias
    ("ping -c 1 -M probe 10.0.0.1", "do, want or dont"),
    ("ping -c 1 -Mdont -s 9000 10.0.0.1", "between 0 and 1472"),
    ("ip link set x master ../v10", "bad value"),
    ("ip link set x master", "bad value"),
    ("ip link set x mast v10", "'ip link set ... mast' is not allowed"),
    ("ip link set x alias", "bad value"),
    ("ip link set x alias a;b", "shell syntax"),
    ("ip link set x alias 'tab\there'", "bad value"),
    ("ip link set x nomaster v10", "is not allowed"),
    # what the real tools read otherwise than a check taking Unicode digits or any word as
    # a name did: each tool refuses these itself, or (axfr, hinfo, hs) reads a query type
    # or class the grammar does not offer
    ("dig @10.0.0.1 lab axfr", "query type AXFR is not offered"),
    ("dig @10.0.0.1 lab IXFR", "query type IXFR is not offered"),
    ("dig @10.0.0.1 TYPE252 lab", "query type TYPE252 is not offered"),
    ("dig @10.0.0.1 x.lab hinfo", "query type HINFO is not offered"),
    ("dig @10.0.0.1 x.lab hs", "class HS is not offered"),
    ("dig @10.0.0.1 x.lab +time=\u0663", "from 1 to 3"),
    ("dig @10.0.0.1 -p \u0665\u0663 x.lab", "port number"),
    ("traceroute -m \u0663\u0660 10.0.0.1", "needs a number"),
    ("tracepath -l \u0662\u0668 10.0.0.1", "needs a number"),
    ("ping -c \u0665 10.0.0.1", "needs a number"),
    ("ping -c 1e0 10.0.0.1", "needs a number"),  # ping reads -c, -s, -t and -w as integers
    ("ping -c 1 -w 1.5 10.0.0.1", "needs a number"),
]

ALLOWED = [
    "traceroute -n -q 1 -w 1 -m 15 10.0.0.1",
    "traceroute -nI 10.0.0.1",
    "traceroute -nT -p 7 10.0.0.1",
    "traceroute --icmp --max-hops=5 --queries=2 --wait=1 -n 10.0.0.1",
    "traceroute -m5 -n 10.0.0.1 1400",
    "tracepath -n -l 1400 10.0.0.1",
    "tracepath -nm5 10.0.0.1",
    "dig @10.0.250.53 h1-1.lab",
    "dig @10.0.250.53 +short +time=1 +tries=1 h1-1.lab A",
    "dig @10.0.250.53 +noall +answer +norec h1-1.lab",
    "dig @10.0.250.53 -x 10.1.1.11",
    "dig @10.0.250.53 -tA -4 h1-1.lab",
    "bridge link show",
    "bridge -d link show dev acc1-eth0",
    "bridge l",
    "bridge fdb show br v10",
    "bridge f s dynamic",
    "ping -c 2 -M do -s 1472 10.0.0.1",
    "ip link set acc1-eth0 master v11",
    "ip link set dev acc1-t1v10 nomaster",
    "ip link set r1-eth1 alias 'to r2 r2-eth1'",
]

# (command, read-only?) through readonly.write_refusal
READ_ONLY = [
    ("ip route show", True), ("ip r g 10.0.0.1", True), ("ip link", True),
    ("ip -s -d link show dev r1-eth0", True), ("ip neigh show", True),
    ("ip link set r1-eth0 up", False), ("ip r a 10.9.0.0/16 via 10.0.0.2", False),
    ("ip route flush cache", False), ("ip rule del pref 100", False),
    ("iptables -S FORWARD", True), ("iptables -nvL", True), ("iptables -L -Z", False),
    ("iptables -C FORWARD -j DROP", True), ("iptables -t nat -F", False),
    ("iptables -I FORWARD -j DROP", False), ("iptables --delete FORWARD 1", False),
    ("iptables-save", True), ("sysctl net.ipv4.ip_forward", True),
    ("sysctl -w net.ipv4.ip_forward=1", False), ("sysctl net.ipv4.ip_forward=0", False),
    ("tc qdisc show", True), ("tc qdisc del dev r1-eth0 root", False),
    ("arp -n", True), ("arp -d 10.0.0.9", False), ("route -n", True),
    ("route add default gw 10.0.0.1", False), ("ifconfig", True),
    ("ifconfig r1-eth0 down", False), ("ping -c 1 10.0.0.1", True),
    ("traceroute -n 10.0.0.1", True), ("tracepath -n 10.0.0.1", True),
    ("dig @10.0.0.1 x.lab", True), ("bridge link show", True),
    ("cat /proc/net/dev", True), ("vtysh -c 'show ip route'", True),
    ("vtysh -c 'conf t' -c 'router ospf'", False), ("vtysh -c 'clear ip ospf process'", False),
]  # fmt: skip


@pytest.mark.parametrize(("command", "fragment"), REFUSED)
def test_refused_with_the_reason(command, fragment):
    checked = policy.check(command)
    assert not checked.allowed, command
    assert fragment in checked.reason, (command, checked.reason)


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed(command):
    assert policy.check(command).allowed, policy.check(command).reason


@pytest.mark.parametrize(("command", "reads"), READ_ONLY)
def test_read_only_predicate(command, reads):
    checked = policy.check(command)
    assert checked.allowed, checked.reason
    why = readonly.write_refusal(checked.argv)
    assert (why is None) == reads, (command, why)
    if why:
        assert why.startswith(readonly.WHY)


SVC_REFUSED = [
    ("dns", "use svcctl dns show"), ("ftp show", "knows the services"),
    ("dns list", "use svcctl dns show"), ("dns show extra", "takes no more words"),
    ("dns set host-record", "needs a directive and a value"),
    ("dns set conf-file /etc/passwd", "has the directives"),
    ("dns set dhcp-script /bin/sh", "has the directives"),
    ("dns set host-record x.lab,10.0.0.300", "bad value"),
    ("dns set host-record x.lab,10.0.0.1,extra", "bad value"),
    ("dns set server /lab/10.0.0.1#53", "bad value"),
    ("dns set interface ../../etc", "bad value"),
    ("vrrp set priority 10 255", "bad value"), ("vrrp set priority 10 0", "bad value"),
    ("vrrp set virtual_ipaddress 10 10.0.0.1", "bad value"),
    ("vrrp set notify_master 10 /bin/sh", "has the directives"),
    ("vrrp unset priority 10;x", "bad key"),
    # values a daemon cannot read, which stopped it (Unicode digits, a label dnsmasq calls
    # a bad name, a prefix keepalived reads as /32)
    ("dns set host-record web.lab,10.0.1.\u0661", "bad value"),
    ("dns set address /web.lab/\u0661\u0660.0.1.1", "bad value"),
    ("dhcp set dhcp-range set:v10,10.1.10.100,10.1.10.199,255.255.255.0,\u0663h", "bad value"),
    ("vrrp set priority \u0661\u0660 150", "bad value"),
    ("vrrp set advert_int 10 \u0661", "bad value"),
    (f"dns set host-record {'a' * 64}.lab,10.0.0.1", "bad value"),
    ("vrrp set virtual_ipaddress 10 10.1.10.254/99", "bad value"),
    ("dns set host-record web.lab,10.0.1.1\u200b", "bad value"),
    ("dns set host-record \uff57eb.lab,10.0.1.1", "bad value"),  # a fullwidth look-alike
    # an interface name the kernel loads a module for, refused as in every lab command
    ("vrrp set track_interface 10 gre0", "kernel module's device"),
    ("dns set interface tunl0", "kernel module's device"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "fragment"), SVC_REFUSED)
def test_svcctl_refuses(args, fragment):
    with pytest.raises(svcctl.SvcctlError, match=fragment.replace("(", r"\(")):
        svcctl.parse(args.split())


class _Sandbox:
    """The wrapped sandbox (our own boundary), recording what reaches it."""

    def __init__(self, read_only: bool) -> None:
        self.machines = ("srv1", "r1")
        self.read_only = read_only
        self.ran: list[str] = []

    def run(self, machine: str, command: str) -> SandboxResult:
        self.ran.append(command)
        return SandboxResult(Status.OK, machine, command, output="ran")


class _Control:
    def __init__(self) -> None:
        self.applied: list[svcctl.SvcCommand] = []

    def apply(self, machine: str, command: svcctl.SvcCommand) -> str:
        if machine != "srv1":
            raise svcctl.SvcctlError(f"{machine} runs no {command.service} service")
        self.applied.append(command)
        return "done"


@pytest.mark.parametrize(
    ("read_only", "machine", "command", "status", "fragment"),
    [
        (False, "srv1", "svcctl dns set host-record a.lab,10.0.0.9", Status.OK, "done"),
        (False, "srv1", "sudo svcctl dns show", Status.OK, "done"),
        (True, "srv1", "svcctl dns show", Status.OK, "done"),
        (True, "srv1", "svcctl dns set host-record a.lab,10.0.0.9", Status.REJECTED, "read-only"),
        (True, "srv1", "svcctl dns unset host-record a.lab", Status.REJECTED, "read-only"),
        (False, "r1", "svcctl dns show", Status.FAILED, "runs no dns service"),
        (False, "srv1", "svcctl dns show; reboot", Status.REJECTED, "shell syntax"),
        (False, "srv1", "svcctl dns set host-record 'a.lab,10.0.0.9", Status.REJECTED, "svcctl"),
        (False, "srv1", "svcctl dns set x y", Status.REJECTED, "has the directives"),
        (False, "h9", "svcctl dns show", Status.OK, "ran"),  # the sandbox's own refusal
        (False, "srv1", "ip route show", Status.OK, "ran"),
        # words are split as shlex splits them (ASCII whitespace): "sudo\u00a0svcctl" is one
        # word, a tool the sandbox does not know, not sudo and svcctl
        (False, "srv1", "sudo\u00a0svcctl dns set host-record a.lab,10.0.0.9", Status.OK, "ran"),
        (False, "srv1", "svcctl\u2003dns show", Status.OK, "ran"),
    ],
)
def test_service_gate(read_only, machine, command, status, fragment):
    sandbox, control = _Sandbox(read_only), _Control()
    result = ServiceGate(sandbox, control).run(machine, command)
    assert result.status is status, result
    assert fragment in result.output, result.output
    if status is Status.REJECTED:
        assert not control.applied


def test_a_long_svcctl_command_is_refused_before_it_is_split(monkeypatch):
    """A 1 MiB svcctl reply costs no parsing (shlex took 0.4 s of CPU on it)."""
    split: list[int] = []
    real_split = servicegate.shlex.split
    monkeypatch.setattr(servicegate.shlex, "split", lambda s: split.append(len(s)) or real_split(s))
    sandbox, control = _Sandbox(False), _Control()
    command = "svcctl dns set host-record " + "a" * (1 << 20)
    result = ServiceGate(sandbox, control).run("srv1", command)
    assert result.status is Status.REJECTED and "longer than 1000" in result.output
    assert split == [] and not control.applied and not sandbox.ran


def test_the_host_follows_no_symlink_nor_fifo_a_jailed_daemon_leaves_in_its_folder(tmp_path):
    """A daemon runs as root in its jail with its folder writable (daemons.py): a symlink
    or FIFO it planted there (daemon.conf or daemon.out towards a host file) must not make the
    host, which writes the configuration and reads the log back to the agent (a daemon
    that exits on its configuration), write or show that file."""
    secret = tmp_path / "host-file"
    secret.write_text("host secret\n")
    folder = tmp_path / "srv1-dns"
    folder.mkdir()
    (folder / "daemon.conf").symlink_to(secret)
    (folder / "daemon.out").symlink_to(secret)
    config = Config("dns", [("host-record", "web.lab,10.0.1.11")], fixed=DNSMASQ_FIXED)
    daemon = Daemon("srv1", "dns", folder, "/proc/self/ns/net", config)
    assert "host secret" not in daemon.output()
    daemon.write()
    assert secret.read_text() == "host secret\n"
    assert not (folder / "daemon.conf").is_symlink()
    assert "host-record=web.lab,10.0.1.11" in (folder / "daemon.conf").read_text()
    daemon.open_log().close()
    assert secret.read_text() == "host secret\n" and not (folder / "daemon.out").is_symlink()
    for name in ("daemon.out", "daemon.conf"):  # a FIFO would block the host's open
        (folder / name).unlink()
        os.mkfifo(folder / name)
    assert daemon.output() == ""
    daemon.write()
    daemon.open_log().close()
    assert (folder / "daemon.out").is_file() and (folder / "daemon.conf").is_file()


@pytest.mark.parametrize(
    ("said", "agents"),
    [
        ("dnsmasq: unknown interface nosuch0", True),
        ("Sat Nov 28 (vr10) tracked interface nosuch0 doesn't exist\nStopped", True),
        ("bwrap: Can't mount proc on /newroot/proc: Device or resource busy", False),
        ("nsenter: cannot open /proc/4242/ns/net: No such file or directory", False),
        ("", False),
    ],
)
def test_a_daemon_that_said_why_it_exits_is_the_agents_step(said, agents):
    """Services.apply: a daemon that exits on the agent's configuration fails the step;
    a jail that fails around it is still the environment's failure."""
    assert daemons.refused_by_daemon(said) is agents


def _real(argv: list[str]) -> subprocess.CompletedProcess:
    script = "ip link set lo up; exec " + " ".join(argv)
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=20
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("command", "want"),
    [
        ("traceroute -m5 -n -q 1 127.0.0.1", "5 hops max"),  # attached value
        ("traceroute -nm 5 -q 1 127.0.0.1", "5 hops max"),  # a cluster's last takes the next
        ("traceroute --max-hops=4 -n -q 1 127.0.0.1", "4 hops max"),
        ("traceroute -n -q 1 127.0.0.1 1400", "1400 byte packets"),
        ("traceroute --max=2 127.0.0.1", "!Bad option"),
        ("traceroute -nq1 127.0.0.1", "!requires an argument"),
        ("tracepath -n -l 1400 -m 2 127.0.0.1", "pmtu 1400"),
        ("tracepath -nm2 127.0.0.1", "reached"),
        ("dig @127.0.0.1 +time=1 +tries=1 -tA x.lab", "connection refused"),
        ("bridge f s", ""),
        ("bridge l", ""),
        ("dig @127.0.0.1 +time=1 +tries=1 lab axfr", "!for lab failed"),  # a transfer, on TCP
        ("ping -c 1e0 127.0.0.1", "!invalid argument"),
        ("traceroute -m \u0663\u0660 127.0.0.1", "!Cannot handle `-m'"),
    ],
)
def test_the_real_tools_read_these_spellings_as_the_grammar_does(command, want):
    require_root("a throwaway network namespace")
    allowed = policy.check(command).allowed
    done = _real(command.split())
    out = done.stdout + done.stderr
    if want.startswith("!"):
        assert not allowed and done.returncode != 0 and want[1:] in out, out
    else:
        assert allowed, policy.check(command).reason
        assert want in out, out
