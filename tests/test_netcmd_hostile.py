"""Lab commands, hostile: what an attacker sends as {"machine", "command"} replies, through
live routing and netllmbench episodes on real Mininet (and Kathara for netllmbench), and
the jail tested on its own with commands the argument check would refuse.

Each reply must end as a specific typed step with its reason; and the host (network,
/proc/sys/net and /proc/sys/kernel, files under /tmp /root /etc, processes) must be
exactly as it was before the labs started, with nothing a command started still running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulators.netcmd import confine, kinds
from generators.lab.reply import MAX_REPLY_CHARS
from generators.netllmbench.app import NetLLMBenchApp
from generators.netllmbench.config import NetLLMBenchConfig
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.topology import RoutingTopology
from pipeline.core import StepStatus
from tests import hoststate
from tests.conftest import require_emulator
from tests.test_routing_netcmd import _query

pytestmark = pytest.mark.integration
B, P, OK, F = StepStatus.BLOCKED, StepStatus.PARSE_ERROR, StepStatus.OK, StepStatus.EXEC_ERROR
LWT = "net.netfilter.nf_hooks_lwtunnel"
HASHLIMITS = " ".join(
    f"-m hashlimit --hashlimit-above 1/sec --hashlimit-name h{i} --hashlimit-htable-size 1048576"
    for i in range(10)
)

# (command, status, a fragment of what the agent is shown)
SYSCTLS = [
    (f"sysctl -w {LWT}=1", "cannot be undone"),
    (f"sysctl {LWT}=1", "cannot be undone"),
    (f"sysctl -w {LWT.replace('.', '/')}=1", "cannot be undone"),
    (f"sysctl --write {LWT}=1", "cannot be undone"),
    (f"sysctl --wr {LWT}=1", "cannot be undone"),
    (f"sysctl -qw {LWT}=1", "cannot be undone"),
    (f"sysctl -ew net.ipv4.ip_forward=1 {LWT}=1", "cannot be undone"),
    (f"sysctl -w {LWT}=1 net.ipv4.ip_forward=1", "cannot be undone"),
    (f"sysctl net.ipv4.ip_forward=1 -w {LWT}=1", "cannot be undone"),
    ("sysctl -w net.core.rmem_max=1", "shared with the host"),
    ("sysctl -w net.core.wmem_max=1", "shared with the host"),
    ("sysctl -w net.core.netdev_max_backlog=1", "shared with the host"),
    ("sysctl -w net.core.bpf_jit_enable=0", "shared with the host"),
    ("sysctl -w net.core.default_qdisc=pfifo", "shared with the host"),
    ("sysctl -w net.netfilter.nf_conntrack_max=1", "shared with the host"),
    ("sysctl -w net.core.xfrm_acq_expires=1", "shared with the host"),
    ("sysctl -w net.ipv6.route.gc_thresh=1", "shared with the host"),
    ("sysctl -w net.ipv4.nonexistent_key=1", "shared with the host"),
    ("sysctl -w kernel.panic=1", "net.* keys"),
    ("sysctl -w kernel/printk=1", "net.* keys"),
    ("sysctl vm.drop_caches=3", "net.* keys"),
    ("sysctl -w net.ipv4.../kernel.panic=1", "net.* keys"),
    ("sysctl -w net/ipv4/../../kernel/panic=1", "net.* keys"),
    ("sysctl -w net.ipv4.ip_forward", "name=value"),
    ("sysctl -p", "from a file"),
    ("sysctl -p/etc/sysctl.conf", "from a file"),
    ("sysctl --load=/etc/sysctl.conf", "from a file"),
    ("sysctl --lo", "from a file"),
    ("sysctl --system", "settings files"),
    ("sysctl --sys", "settings files"),
    ("sysctl -f /etc/sysctl.conf", "from a file"),
    ("sysctl -a", "naming a folder"),
    ("sysctl --d", "ambiguous"),
    ("sysctl -w net.ipv4.ip_forward=$(id)", "substitution"),
    ("sysctl -w net.ipv4.tcp_congestion_control=westwood", "takes reno or cubic"),
    ("sysctl -w net.ipv4.tcp_congestion_control=dctcp", "takes reno or cubic"),
    ("sysctl net/ipv4/tcp_congestion_control=bbr", "takes reno or cubic"),
]
IP = [
    ("ip -n root link", "(-netns) is not allowed"),
    ("ip -ne root link", "(-netns) is not allowed"),
    ("ip --netns root link", "(-netns) is not allowed"),
    ("ip -b /etc/passwd", "(-batch) is not allowed"),
    ("ip -ba /etc/passwd", "(-batch) is not allowed"),
    ("ip --batch /etc/passwd", "(-batch) is not allowed"),
    ("ip -force -batch /etc/passwd", "(-force) is not allowed"),
    ("ip -all netns exec ip link", "(-all) is not allowed"),
    ("ip -a netns exec ip link", "(-all) is not allowed"),
    ("ip -l 1000000 addr flush dev r0-eth1", "(-loops) is not allowed"),
    ("ip -rc 1 addr", "(-rcvbuf) is not allowed"),
    ("ip -e addr", "is unknown"),
    ("ip netns add evil", "(netns) is not allowed"),
    ("ip net add evil", "(netns) is not allowed"),
    ("ip l s r0-eth1 netns 1", "'ip link set ... netns' is not allowed"),
    ("ip link s dev r0-eth1 name evil", "'ip link set ... name' is not allowed"),
    ("ip link change r0-eth1 mas x", "'ip link set ... mas' is not allowed"),
    ("ip link add dummy0 type dummy", "'ip link add' (add) is not allowed"),
    ("ip l a x type veth peer name y", "(add) is not allowed"),
    ("ip link del r0-eth1", "(delete) is not allowed"),
    ("ip link prop add dev r0-eth1 altname x", "(property) is not allowed"),
    ("ip mon all", "(monitor) is not allowed"),
    ("ip xfrm state flush", "(xfrm) is not allowed"),
    ("ip x s f", "(xfrm) is not allowed"),
    ("ip tunnel add t0 mode gre remote 1.1.1.1", "(tunnel) is not allowed"),
    ("ip tuntap add tap0 mode tap", "(tuntap) is not allowed"),
    ("ip vrf exec x ip a", "(vrf) is not allowed"),
    ("ip r add 10.9.0.0/24 dev r0-eth1 encap bpf in obj /x", "(encap) is not allowed"),
    ("ip r add 10.9.0.0/24 dev r0-eth1 enc bpf in obj /x", "(encap) is not allowed"),
    ("ip a save", "(save) is not allowed"),
    ("ip r sa", "(save) is not allowed"),
    ("ip route restore", "(restore) is not allowed"),
    ("ip ru resto", "(restore) is not allowed"),
    ("ip r showdump", "(showdump) is not allowed"),
    ("ip route 10.0.0.0/8", "is not a command of ip route"),
]
IPTABLES = [
    ("iptables --modprobe=/bin/sh -L", "--modprobe runs a program"),
    ("iptables --mo=/bin/sh -L", "--modprobe runs a program"),
    ("iptables --modp /bin/sh -L", "--modprobe runs a program"),
    ("iptables -M /bin/sh -L", "--modprobe runs a program"),
    ("iptables -M/bin/sh -L", "--modprobe runs a program"),
    ("iptables -nM/bin/sh -L", "--modprobe runs a program"),
    ("iptables -t security -L", "-t takes one of"),
    ("iptables -tbroute -L", "-t takes one of"),
    ("iptables --table=broute -L", "-t takes one of"),
    ("iptables --tab broute -L", "-t takes one of"),
    ("iptables -A INPUT -j LOG --log-prefix x", "kernel log"),
    ("iptables -A INPUT -j TRACE", "kernel log"),
    ("iptables -t raw -A PREROUTING -j TRACE", "kernel log"),
    ("iptables -A INPUT -j NFLOG", "host's logs"),
    ("iptables -A INPUT -j IDLETIMER --timeout 1 --label x", "sysfs"),
    ("iptables -A INPUT -j LED --led-trigger-id x", "LED"),
    ("iptables -t raw -A PREROUTING -j CT --helper ftp", "helpers"),
    ("iptables -A INPUT -j NFQUEUE", "userspace queue"),
    ("iptables -A INPUT -m bpf --bytecode 1,6,0,0,0", "match 'bpf' is not available"),
    ("iptables -A OUTPUT -m cgroup --path / -j DROP", "match 'cgroup' is not available"),
    ("iptables -A INPUT -m socket -j ACCEPT", "match 'socket' is not available"),
    ("iptables -A OUTPUT -m owner --uid-owner 0 -j DROP", "match 'owner' is not available"),
    ("iptables -A INPUT -m set --match-set x src -j DROP", "match 'set' is not available"),
    (f"iptables -A INPUT {HASHLIMITS} -j DROP", "'hashlimit' is not allowed: its verdict"),
    (
        "iptables -A INPUT -m hashlimit --hashlimit-above 1/s --hashlimit-name x "
        "--hashlimit-htable-size 100000 -j DROP",
        "'hashlimit' is not allowed: its verdict",
    ),
    (
        "iptables -A INPUT "
        + " ".join(f"-m comment --comment c{i}" for i in range(7))
        + " -j DROP",
        "at most 6 matches",
    ),
    ("iptables -A INPUT -m string --algo bm --string " + "x" * 300 + " -j DROP", "limited to 128"),
    ("iptables -A INPUT -m recent --name " + "n" * 64 + " --set", "'recent' is not allowed"),
    ("iptables -A INPUT -m limit --limit-burst 999999 -j ACCEPT", "'limit' is not allowed"),
    ("iptables -I FORWARD -m limit --limit 1/hour --limit-burst 5000 -j ACCEPT", "lasting"),
    ("iptables -A INPUT -m connlimit --connlimit-above 2 -j DROP", "lasting"),
    ("iptables --d INPUT 1", "ambiguous"),
    ("iptables -A INPUT -j EVIL", "not available"),
    ("iptables -A INPUT -- -j DROP", "'--' is not allowed"),
    ("iptables-save -M /bin/sh", "--modprobe runs a program"),
    ("iptables-save --modprobe=/bin/sh", "--modprobe runs a program"),
    ("iptables-save -f /tmp/ngr-hostile-save", "to a file is not allowed"),
    ("iptables-save --fi /tmp/ngr-hostile-save", "to a file is not allowed"),
    ("iptables-save -t security", "-t takes one of"),
    ("iptables -A INPUT -m string --algo fsm --string x -j DROP", "--algo takes bm or kmp"),
    ("iptables -A INPUT -m string --al=fsm --string x -j DROP", "--algo takes bm or kmp"),
    ("iptables -A INPUT -i gre0 -j DROP", "kernel module's device"),
]
TC = [
    ("tc -b /etc/passwd", "(-batch) is not allowed"),
    ("tc -n root qdisc show", "(-netns) is not allowed"),
    ("tc -cf /etc/passwd qdisc show", "configuration files"),
    ("tc -c /etc/passwd qdisc show", "configuration files"),
    ("tc -co /etc/passwd qdisc show", "configuration files"),
    ("tc -f qdisc show", "(-force) is not allowed"),
    ("tc exec bpf imp /x", "'tc exec' is not allowed"),
    ("tc e bpf imp /x", "'tc e' is not allowed"),
    ("tc monitor", "'tc monitor' is not allowed"),
    ("tc m", "'tc m' is not allowed"),
    ("tc actions add action mirred egress redirect dev lo", "'tc actions' is not allowed"),
    ("tc filter add dev r0-eth1 parent 1: bpf obj /x sec s", "(bpf) is not allowed"),
    ("tc f a dev r0-eth1 ingress bpf da obj /x", "(bpf) is not allowed"),
    ("tc qdisc link dev r0-eth1", "'tc qdisc link' is not allowed"),
    ("tc qdisc add dev r0-eth1 root cake", "qdisc kind 'cake' is not available"),
    ("tc qdisc add dev r0-eth1 root netem delay 100ms", "qdisc kind 'netem'"),
    ("tc q a dev r0-eth1 root handle 1: hfsc", "qdisc kind 'hfsc'"),
    ("tc qdisc add dev r0-eth1 root ro pfifo", "qdisc kind 'ro'"),
    ("tc filter add dev r0-eth1 parent 1: route to 1 classid 1:1", "filter kind 'route'"),
    ("tc f a dev r0-eth1 parent 1: tcindex hash 16", "filter kind 'tcindex'"),
    ("tc filter add dev r0-eth1 parent 1: rsvp ipproto tcp", "filter kind 'rsvp'"),
    ("tc filter add dev r0-eth1 parent 1: flower ip_proto tcp", "filter kind 'flower'"),
    ("tc filter add dev r0-eth1 parent 1: basic classid 1:1", "filter kind 'basic'"),
    (
        "tc filter add dev r0-eth1 parent 1: matchall action mirred egress redirect dev r0-eth2",
        "action 'mirred'",
    ),
    (
        "tc filter add dev r0-eth1 parent 1: matchall action nat egress 1.1.1.1 2.2.2.2",
        "action 'nat'",
    ),
    (
        "tc filter add dev r0-eth1 parent 1: u32 match ip src 1.1.1.1/32 police rate 1mbit",
        "policers",
    ),
    ("tc chain add dev r0-eth1 parent 1: chain 1 flower", "'tc chain add' is not allowed"),
    ("tc qdisc add dev r0-eth1 root sfq divisor 65536", "not between 1 and 1024"),
    ("tc qdisc add dev r0-eth1 root sfq flows 65000 depth 1000", "not between"),
    ("tc qdisc add dev r0-eth1 root tbf rate 1mbit burst 1gb limit 4gb", "most allowed here"),
    ("tc qdisc add dev r0-eth1 root tbf rate 1mbit bu 64 lim 4gb", "most allowed here"),
    ("tc qdisc add dev r0-eth1 root fq_codel flows 65536", "not between"),
    ("tc class add dev r0-eth1 parent 1: classid 1:1 htb rate 1mbit quantum 1gb", "most allowed"),
    ("tc qdisc add dev r0-eth1 root est 1s 8s pfifo", "rate estimators"),
    ("tc qdisc add dev r0-eth1 root stab overhead 1 pfifo", "size tables"),
    ("tc qdisc show dev gre0", "kernel module's device"),
]
OTHERS = [
    ("ping -f -c 5 10.0.1.2", "not allowed"),
    ("ping -c 1000 10.0.1.2", "between 1 and 5"),
    ("ping -c2W1 10.0.1.2", "needs a number"),
    ("ping -l 100 -c 5 10.0.1.2", "not allowed"),
    ("ping -s 65000 -c 1 10.0.1.2", "between 0 and 1472"),
    ("ping -c5 -i0.01 10.0.1.2", "between 0.2 and 1"),
    ("ping -b -c 1 10.0.1.255", "not allowed"),
    ("ping 10.0.1.2", "needs a count"),
    ("ping -c 1 10.0.1.2 10.0.2.2", "exactly one"),
    ("arp -f /etc/ethers", "reads a file"),
    ("arp --file /etc/ethers", "reads a file"),
    ("arp -nf /etc/ethers", "reads a file"),
    ("arp -H ax25 -s 10.0.1.2 1", "only ether"),
    ("route -A inet6 add ::/0 dev r0-eth1", "only inet"),
    ("route add -net 10.9.0.0 netmask 255.255.255.0 --evil r0-eth1", "unrecognized option"),
    ("ifconfig r0-eth1 $(id)", "substitution"),
    ("cat /etc/shadow", "only read files"),
    ("cat /proc/sys/kernel/hostname", "only read files"),
    ("cat /proc/net/../../etc/shadow", "only read files"),
    ("cat /proc/1/environ", "only read files"),
    ("cat -A /proc/net/route", "option -A is not allowed"),
    ("sh -c 'ip addr'", "not an allowed tool"),
    ("bash", "not an allowed tool"),
    ("python3 -c 'print(1)'", "not an allowed tool"),
    ("busybox sh", "not an allowed tool"),
    ("ifconfig tunl0", "kernel module's device"),
    ("ifconfig sit0:1 10.9.0.1 up", "kernel module's device"),
    ("ip link show ip6tnl0", "kernel module's device"),
    ("ip addr show dev ip_vti0", "kernel module's device"),
    ("ping -c 1 -I xfrm0 10.0.1.2", "kernel module's device"),
    ("arp -i gretap0 -n", "kernel module's device"),
    ("ip link add g0 type gre remote 10.0.1.2", "(add) is not allowed"),
    ("nsenter -t 1 -n ip link", "not an allowed tool"),
    ("unshare -n ip link", "not an allowed tool"),
    ("/usr/bin/env ip addr", "not an allowed tool"),
    ("/tmp/ip addr", "not an allowed tool"),
    ("ip addr; reboot", "command list"),
    ("ip addr | sh", "pipe"),
    ("ip addr > /tmp/ngr-hostile-x", "redirection"),
    ("ip link set `id` up", "command substitution"),
    ("ip addr\nreboot", "more than one line"),
    ("ip addr \x00", "NUL"),
    ("ip addr " + "x" * 1200, "longer than 1000"),
]
ROUTING = [(c, B, n) for c, n in SYSCTLS + IP + IPTABLES + TC + OTHERS]
# Replies that never parse as a command (sent as they are, not as a command).
RAW = [
    ("not json at all", P, "no JSON object"),
    ('{"machine": "r0"}', P, 'no "command"'),
    ("{" * 60000, P, "no JSON object"),
    ('{"command": ' + "[" * 60000, P, "no JSON object"),
    ("x" * (MAX_REPLY_CHARS + 1), P, "at most"),
]
# Commands that run, harmlessly, in the jail.
HARMLESS = [
    ("sysctl net.netfilter.nf_hooks_lwtunnel", OK, "nf_hooks_lwtunnel = 0"),
    ("sysctl -w net.ipv4.conf.all.rp_filter=0", OK, "rp_filter = 0"),
    ("ip -br a s", OK, "r0-eth1"),
    ("iptables -L -n", OK, "Chain INPUT"),
    ("cat /proc/net/route", OK, "Iface"),
    ("sysctl -w net.ipv4.tcp_congestion_control=reno", OK, "= reno"),
    ("tc qdisc add dev r0-eth1 root pfifo limit 100", OK, ""),
    ("tc qdisc del dev r0-eth1 root", OK, ""),
]
# netllmbench uses the same sandbox; a sample on its own labs (host h1, router r1).
NETLLMBENCH = [
    (f"sysctl -w {LWT}=1", B, "cannot be undone"),
    ("sysctl -w net.core.rmem_max=1", B, "shared with the host"),
    ("ip -n root link", B, "(-netns) is not allowed"),
    ("ip l s eth0 netns 1", B, "'ip link set ... netns' is not allowed"),
    ("iptables --mo=/bin/sh -L", B, "--modprobe"),
    ("iptables -tbroute -L", B, "-t takes one of"),
    (f"iptables -A INPUT {HASHLIMITS} -j DROP", B, "'hashlimit' is not allowed"),
    ("tc -c /etc/passwd qdisc show", B, "configuration files"),
    ("cat /etc/shadow", B, "only read files"),
    ("ping -f -c 5 192.168.1.1", B, "not allowed"),
    ("sh -c id", B, "not an allowed tool"),
    ("ip addr; reboot", B, "command list"),
]


def test_the_suites_are_large_enough():
    assert len(ROUTING) + len(RAW) + len(NETLLMBENCH) >= 120


# Modules that the refused commands above would make the kernel load (on a kernel with
# module support): none of them may be loaded after the suite unless it was before.
REFUSED_MODULES = (
    "sch_cake", "sch_netem", "sch_hfsc", "sch_qfq", "sch_choke", "cls_route", "cls_tcindex",
    "cls_rsvp", "cls_flower", "cls_basic", "cls_cgroup", "act_mirred", "act_nat", "act_pedit",
    "act_police", "tcp_westwood", "tcp_dctcp", "tcp_bbr", "ts_fsm", "ip_gre", "ipip", "sit",
    "ip6_tunnel", "ip_vti", "ip6_vti", "xfrm_interface", "em_cmp", "xt_bpf", "xt_cgroup",
)  # fmt: skip


def _lwt() -> str:
    return Path("/proc/sys/net/netfilter/nf_hooks_lwtunnel").read_text().strip()


@pytest.fixture(scope="module")
def host_unchanged():
    require_emulator("mininet")
    # Only what the allowed kinds need, as the sandbox itself does: a module a refused
    # command made the kernel load would show up as a new module.
    kinds.preload()
    lwt = _lwt()
    loaded = kinds.loaded_modules()
    before = hoststate.snapshot()
    yield
    assert _lwt() == lwt
    assert hoststate.diff(before, hoststate.snapshot()) == []
    new = kinds.loaded_modules() - loaded
    assert not new & set(REFUSED_MODULES), sorted(new)
    assert not list(Path("/tmp").glob("ngr-hostile-*"))


@pytest.mark.usefixtures("host_unchanged")
def test_routing_episode_turns_every_hostile_command_into_a_typed_step():
    topo = RoutingTopology(2, 1)
    replies = [
        (json.dumps({"machine": "r0", "command": c}), status, needle)
        for c, status, needle in ROUTING + HARMLESS
    ]
    replies += RAW
    cfg = RoutingConfig(max_turns=len(replies) + 1)
    with RoutingEnvironment(cfg) as env, env.episode(_query(topo)) as episode:
        for reply, status, needle in replies:
            step = episode.step(reply)
            assert step.status is status, (reply[:120], step.output[-300:])
            assert needle in step.output, (reply[:120], step.output[-300:])
            if status is B:
                assert step.evidence["argv"] == [] and step.evidence["sandbox"] == "rejected"
            if status is not OK:
                assert step.evidence["before"] == step.evidence["after"]


@pytest.mark.parametrize("backend", ["mininet", "kathara"])
def test_netllmbench_episodes_refuse_the_same_commands(backend, host_unchanged):
    require_emulator(backend)
    app = NetLLMBenchApp(NetLLMBenchConfig(name=f"netllmbench_{backend}", emulator=backend))
    (query,) = app.generate(2, 0, 1)
    with app.environment() as env, env.episode(query) as episode:
        for command, status, needle in NETLLMBENCH:
            machine = "r1" if command.startswith(("sysctl", "iptables", "tc")) else "h1"
            step = episode.step(json.dumps({"machine": machine, "command": command}))
            assert step.status is status, (command, step.output[-300:])
            assert needle in step.output, (command, step.output[-300:])


def _run_jailed(emu, device: str, argv: list[str], writes: tuple[str, ...] = ()):
    with confine.confined(argv, argv[:1], writes) as (prefix, jailed):
        return emu.run(device, jailed, timeout_s=3.0, output_bytes=8192, host_prefix=prefix)


@pytest.mark.usefixtures("host_unchanged")
def test_the_jail_holds_without_the_check():
    topo = RoutingTopology(2, 1)
    lwt = _lwt()
    with RoutingEnvironment(RoutingConfig()) as env, env.episode(_query(topo)):
        emu, _ = next(iter(env.pool._live.values()))
        refused = {
            # a host-wide key, written with its current value: a no-op if the jail leaked
            "lwtunnel": ["/usr/sbin/sysctl", "-w", f"{LWT}={lwt}"],
            "printk": ["/usr/sbin/sysctl", "-w", "kernel.printk=" + _printk()],
            "rp_filter not asked for": ["/usr/sbin/sysctl", "-w", "net.ipv4.conf.all.rp_filter=0"],
            "shadow": ["/usr/bin/cat", "/etc/shadow"],
            "root": ["/usr/bin/cat", "/root/.bashrc"],
            "netns": ["/usr/sbin/ip", "netns", "add", "evil"],
            "other namespace": ["/usr/sbin/ip", "-n", "root", "link"],
            "modprobe": ["/usr/sbin/iptables", "--modprobe=/bin/sh", "-t", "evil", "-L"],
        }
        for case, argv in refused.items():
            result = _run_jailed(emu, "r0", argv)
            assert result.exit_code != 0, (case, result.output)
        caps = _run_jailed(emu, "r0", ["/usr/bin/cat", "/proc/self/status"]).output
        assert "CapEff:\t0000000000003000" in caps  # CAP_NET_ADMIN and CAP_NET_RAW only
        allowed = _run_jailed(
            emu, "r0", ["/usr/sbin/sysctl", "-w", "net.ipv4.conf.all.rp_filter=0"],
            ("/proc/sys/net/ipv4/conf/all/rp_filter",),
        )  # fmt: skip
        assert allowed.exit_code == 0, allowed.output
        hung = _run_jailed(emu, "r0", ["/usr/bin/ping", "-c", "50", "-i", "0.2", "10.0.1.2"])
        assert hung.timed_out
    assert _lwt() == lwt
    pings = [p for p in Path("/proc").iterdir() if p.name.isdigit() and "ping -c 50" in _cmd(p)]
    assert pings == []


def _printk() -> str:
    return " ".join(Path("/proc/sys/kernel/printk").read_text().split())


def _cmd(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
