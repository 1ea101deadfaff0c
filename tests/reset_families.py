"""Every family of state-changing command the lab grammar allows, for the reset contract
test (tests/test_emulator_contract.py), on its small lab (r0 between s1 and s2; h1, h3 on
s1; h2 on s2).

FAMILIES are sent as an agent sends them (through the command sandbox: the grammar must
allow each one). LEAKY is state the grammar refuses (emulators/netcmd/durable.py) but the
environment itself could leave behind, applied with the emulator's own `run`: a reset must
undo it too. `covered()` lists what no family shows: every kind of state the policy lets a
command change, per tool and address family (emulators/netcmd/effects.py derives them
from the policy's own tables), must be changed by a family here and held by a section of
the reset's state (emulators/state.py COVERS); and every grammar word must be used. So a
kind, a family or a setting added to the policy without a family here fails the suite.
"""

from __future__ import annotations

import shlex

FAMILIES: list[tuple[str, str]] = [
    # ip address: every attribute ipaddress.c sets on IPv4
    ("r0", "ip addr add 10.0.1.100/24 dev r0-eth1 label r0-eth1:al metric 9 noprefixroute"),
    ("r0", "ip addr add 10.0.2.100 peer 10.0.2.200/32 dev r0-eth2"),
    ("r0", "ip addr add 10.9.9.1/24 brd + dev r0-eth2 scope link preferred_lft 0"),
    ("r0", "ip addr change 10.0.1.1/24 dev r0-eth1 preferred_lft 0"),
    ("h1", "ip addr add 10.0.2.2/32 dev lo"),  # an alias of h2 on h1's loopback
    ("h3", "ip addr flush dev h3-eth0"),
    # ip route, ip rule
    ("r0", "ip route add 10.50.0.0/16 via 10.0.2.2 mtu 1200 advmss 1000 window 5000"),
    ("r0", "ip route add blackhole 10.51.0.0/16"),
    ("r0", "ip route add unreachable 10.52.0.0/16 table 77"),
    ("r0", "ip route replace 10.0.1.0/24 dev r0-eth2"),
    ("h1", "ip route replace default via 10.0.1.1 dev lo onlink"),
    ("r0", "ip rule add pref 300 from 10.0.2.0/24 lookup 77"),
    ("r0", "ip rule add pref 301 to 10.9.0.0/16 prohibit"),
    # IPv6: rules and routes need no IPv6 on any interface; proxy entries neither
    ("r0", "ip -6 rule add pref 100 prohibit"),  # survived the reset before issue 26
    ("r0", "ip -6 ru a pref 101 to 2001:db8::/32 lookup 77"),
    ("r0", "ip route add unreachable 2001:db8:1::/48 table 77"),  # the family from the prefix
    ("r0", "ip -family inet6 route add blackhole 2001:db8:2::/48"),
    ("r0", "ip neigh add proxy 2001:db8::6 dev r0-eth1"),
    # ... addresses, neighbours and device routes once a sysctl turns IPv6 on
    ("h2", "sysctl -w net.ipv6.conf.h2-eth0.disable_ipv6=0"),
    ("h2", "ip -6 addr add 2001:db8:9::2/64 dev h2-eth0 nodad"),
    ("h2", "ip -6 neigh add 2001:db8:9::9 lladdr 00:11:22:33:44:02 dev h2-eth0"),
    ("h2", "ip -6 route add 2001:db8:a::/48 via 2001:db8:9::9"),
    ("h2", "route -6 add default dev h2-eth0"),  # route takes no IPv6 text but `default`
    # ip neighbour, arp (permanent and proxy entries)
    ("r0", "ip neigh add 10.0.1.77 lladdr 00:11:22:33:44:55 dev r0-eth1"),
    ("r0", "ip neigh add proxy 10.0.1.78 dev r0-eth1"),
    ("r0", "ip neigh replace 10.0.1.2 lladdr 02:00:00:00:00:01 dev r0-eth1 nud noarp"),
    ("r0", "arp -s 10.0.1.80 00:11:22:33:44:66"),
    ("r0", "arp -i r0-eth1 -s 10.0.1.81 00:11:22:33:44:67 pub"),
    ("r0", "arp -d 10.0.1.80"),
    ("r0", "arp -s 10.0.1.82 00:11:22:33:44:68"),
    # ip link set: every setting LINK_SET allows
    ("r0", "ip link set r0-eth1 mtu 1400"),
    ("r0", "ip link set dev r0-eth2 address 02:00:00:00:00:09"),
    ("r0", "ip link set r0-eth2 arp off"),
    ("r0", "ip link set r0-eth1 promisc on"),
    ("r0", "ip link set r0-eth1 multicast off"),
    ("r0", "ip link set r0-eth2 allmulticast on"),
    ("r0", "ip link set r0-eth1 txqueuelen 77"),
    ("h2", "ip link set h2-eth0 txqlen 55"),
    ("h3", "ip link set h3-eth0 qlen 44"),
    ("r0", "ip link set r0-eth2 alias uplink-s2"),
    ("h1", "ip link set h1-eth0 nomaster"),
    ("r0", "ip link set lo down"),
    ("h3", "ip link set h3-eth0 down"),
    ("h3", "ip link set h3-eth0 up"),
    # ifconfig: alias interfaces (address labels) and every setting it takes
    ("h1", "ifconfig h1-eth0 netmask 255.255.0.0 broadcast 10.0.255.255"),
    ("h1", "ifconfig h1-eth0 mtu 1300 txqueuelen 33 -arp promisc allmulti"),
    ("h1", "ifconfig h1-eth0 hw ether 02:00:00:00:00:0a"),
    ("h1", "ifconfig h1-eth0 arp -promisc -allmulti down"),
    ("h1", "ifconfig h1-eth0 up"),
    ("h2", "ifconfig h2-eth0 add 10.0.2.3"),  # IPv6-only in net-tools: changes nothing
    ("h2", "ifconfig h2-eth0 del 10.0.2.3"),
    # route (net-tools)
    ("r0", "route add -net 10.60.0.0 netmask 255.255.0.0 gw 10.0.2.2 metric 5 mss 1000"),
    ("r0", "route add -net 10.62.0.0 netmask 255.255.0.0 dev r0-eth2 window 4000 irtt 100"),
    ("r0", "route add -net 10.61.0.0 netmask 255.255.0.0 reject"),
    ("r0", "route add -host 10.0.9.9 dev r0-eth1 mod dyn reinstate"),
    ("h2", "route del default"),
    # iptables: every table, a chain of the agent's, policies
    ("r0", "iptables -t nat -A POSTROUTING -j MASQUERADE"),
    ("r0", "iptables -t mangle -A PREROUTING -j MARK --set-mark 3"),
    ("r0", "iptables -t raw -A PREROUTING -j NOTRACK"),
    ("r0", "iptables -N agentchain"),
    ("r0", "iptables -A agentchain -p tcp -j DROP"),
    ("r0", "iptables -I INPUT -j agentchain"),
    ("r0", "iptables -P FORWARD DROP"),
    ("r0", "iptables -A FORWARD -p udp -j REJECT"),
    ("h3", "iptables -A INPUT -p icmp -j DROP"),
    # tc
    ("r0", "tc qdisc add dev r0-eth1 root pfifo limit 10"),
    ("r0", "tc qdisc add dev r0-eth2 ingress"),
    ("h2", "tc qdisc add dev h2-eth0 clsact"),
    ("h2", "ip link set h2-eth0 down"),
    # sysctl (per-namespace keys)
    ("r0", "sysctl -w net.ipv4.ip_forward=0 net.ipv4.conf.all.rp_filter=2"),
    ("r0", "sysctl -w net.ipv4.conf.r0-eth1.proxy_arp=1"),
    ("r0", "sysctl -w net.ipv4.icmp_echo_ignore_all=1"),
    ("h2", "sysctl -w net.ipv4.conf.h2-eth0.arp_ignore=8"),
]

# Refused by the grammar, but a reset must undo them whoever made them.
LEAKY: list[tuple[str, str]] = [
    # the leak: a healthy address given a lifetime expired in the next episode
    ("r0", "ip addr change 10.0.2.1/24 brd 10.0.2.255 dev r0-eth2 valid_lft 30 preferred_lft 30"),
    ("r0", "ip addr add 10.0.1.90/24 dev r0-eth1 valid_lft 100 preferred_lft 50"),
    ("r0", "ip link set r0-eth1 alias leaky"),
    ("r0", "ip neigh add 10.0.1.91 lladdr 00:11:22:33:44:00 dev r0-eth1 nud reachable"),
    ("r0", "iptables -A INPUT -m limit --limit 1/s -j ACCEPT"),
    ("r0", "tc qdisc add dev r0-eth2 root tbf rate 1mbit burst 64 latency 50ms"),
    ("h2", "arp -i h2-eth0 -s 10.0.2.99 00:11:22:33:44:01 temp"),
    # a classful qdisc with a class and a filter: what `tc class|filter delete` acts on
    ("h3", "tc qdisc add dev h3-eth0 root handle 1: htb default 10"),
    ("h3", "tc class add dev h3-eth0 parent 1: classid 1:10 htb rate 100mbit"),
    (
        "h3",
        "tc filter add dev h3-eth0 parent 1: protocol ip prio 1 u32 match ip dst "
        "10.9.0.0/16 classid 1:10",
    ),
]


def shown() -> frozenset[tuple[str, str]]:
    """The kinds of state the families change, read as the policy reads them."""
    from emulators.netcmd import effects
    from emulators.netcmd.policy import check

    kinds: set[tuple[str, str]] = set()
    for _, command in FAMILIES:
        checked = check(command)
        kinds |= effects.changes(checked.argv, checked.writes)
    for _, command in LEAKY:  # refused by the policy: read as the tool reads them
        kinds |= effects.changes(shlex.split(command))
    return frozenset(kinds)


def covered() -> list[str]:
    """What the families leave unshown: kinds of state the policy lets a command change
    that no family changes or that no section of the reset's state holds, tools the
    effects do not classify, and grammar words (tools, ip objects, ip link settings,
    ifconfig words) that no family uses; empty when the families cover the policy."""
    from emulators.netcmd import effects
    from emulators.netcmd.iproute import LINK_SET
    from emulators.netcmd.tools import IFCONFIG_WORDS, TOOL_NAMES
    from emulators.state import COVERS

    allowed = effects.allowed()
    missing = [f"no family changes {k}" for k in sorted(allowed - shown())]
    missing += [f"no state section holds {k}" for k in sorted(allowed - COVERS.keys())]
    missing += [f"effects.py does not read the tool {t}" for t in effects.unclassified()]
    words = [w for _, c in FAMILIES for w in c.split()]
    read_only = set(effects.READ_ONLY)
    missing += [f"tool {t}" for t in TOOL_NAMES if t not in read_only and t not in words]
    objects = {c.split()[1] for _, c in FAMILIES if c.startswith("ip ")}
    for obj in ("addr", "route", "rule", "neigh", "link"):
        if obj not in objects:
            missing.append(f"ip {obj}")
    link_words = [w for _, c in FAMILIES if c.startswith("ip link set") for w in c.split()]
    # `master` needs a bridge on the device, which this lab (every backend's, Kathara has
    # no bridge devices) does not hold; the reset of a port's master is proven on the
    # incidents labs (tests/test_faults_dp_live.py: an L2 fault moves a port, reset).
    missing += [f"ip link set {k}" for k in LINK_SET if k not in [*link_words, "master"]]
    if_words = [w for _, c in FAMILIES if c.startswith("ifconfig") for w in c.split()]
    # `metric`: Linux has no interface metric (SIOCSIFMETRIC fails): it changes nothing.
    missing += [f"ifconfig {k}" for k in IFCONFIG_WORDS if k not in [*if_words, "metric"]]
    return missing
