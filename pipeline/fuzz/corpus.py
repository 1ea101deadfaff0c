"""What the fuzzer draws from: hostile values, and the commands and lines operators type.

The hostile tables feed pipeline/fuzz/grammar.py's mutations; the command corpora are the
seeds of pipeline/fuzz/targets.py (besides each query's oracle replies), so mutations
reach every tool's grammar and not only the oracle's commands.
"""

# Text no tool expects: NUL, control bytes, lone surrogates (what a JSON "\ud800" escape
# decodes to), bidi and line separators, non-ASCII digits, a byte order mark.
HOSTILE_TEXT = (
    "", " ", "\x00", "a\x00b", "\ud800", "x\udcff", "\udfff\ud800", "\x01\x02\x1b[31m",
    "\x7f", "\u2028", "\u202e", "\ufeff", "é", "١٢٣", "\r\n", "\t", "\\", "'", '"', "$(id)",
    "`id`", ";", "|", "&&", "*", "../../etc/passwd", "%s%n", "{}", "\x85",
)  # fmt: skip
# Numbers as JSON text: past every integer limit, not finite, negative zero, tiny.
JSON_NUMBERS = (
    "0", "-0", "-1", "1e309", "-1e309", "NaN", "Infinity", "-Infinity", "1e-400",
    "18446744073709551616", "-9223372036854775809", "4294967296", "1.5", "1" * 4301,
    "-" + "9" * 5000, "1" + "0" * 400 + ".5", "0.1e99999",
)  # fmt: skip
# Numbers as command words: what int() and the real tools read differently.
WORD_NUMBERS = (
    "0", "-1", "+1", "4294967296", "99999999999999999999", "0x7fffffff", "1_000", "٣",
    "1e3", "inf", "nan", "0b1", "017", "65536", "-0", "1" * 400, " 1",
)  # fmt: skip
# Options and words whose value a tool takes as free text.
FREE_TEXT = frozenset(
    ["comment", "string", "log-prefix", "alias", "description", "hostname", "hex-string",
     "nflog-prefix", "name", "set-name"]
)  # fmt: skip
FRR_LINES = (
    "configure terminal", "router ospf", "router bgp 65001", "interface eth0",
    "neighbor 10.0.0.2 description", "neighbor 10.0.0.2 remote-as 65002",
    "network 10.0.0.0/24 area 0",
    "ip prefix-list p seq 5 permit 10.0.0.0/8 le 32", "route-map r permit 10",
    "access-list 1 permit any", "description", "hostname", "no router ospf",
    "show bgp summary json", "show ip ospf neighbor json", "do show running-config",
)  # fmt: skip
YAML_BOMB = (
    'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
)
YAML_TAGS = (
    "!!python/object/apply:os.system ['id']", "--- !!binary AAAA", "x: !!float nan",
    "x: !!int 0x" + "f" * 5000, "%YAML 9.9", "x: !custom {a: 1}", "? [a, b]\n: c",
    "x: 2001-12-14t21:59:43.10-05:00", "x: <<: *nope",
)  # fmt: skip
CODE_BODIES = (
    "    return 10 ** 5000",
    "    return [[[[]]]] * 10",
    "    x = []\n    for _ in range(100000):\n        x = [x]\n    return x",
    "    d = {}\n    for _ in range(5000):\n        d = {'a': d}\n    return d",
    "    return float('nan')",
    "    return object()",
    "    return (i for i in range(3))",
    "    return {(1, 2): 3, None: 4}",
    "    return b'\\x00\\xff'",
    "    return {1, 2}",
    "    return '\\ud800' * 1000",
    "    return 'x' * 50_000_000",
    "    return graph.copy()",
    "    raise SystemExit(3)",
    "    raise KeyboardInterrupt",
    "    raise BaseException('\\udcff')",
    "    raise RecursionError",
    "    print('\\udcff\\x00' * 100000)\n    return 1",
    "    import sys\n    sys.stdout.write('\\x00')\n    return 1",
    "    return len(graph.nodes) + 10 ** 4300",
    "    graph.graph['x'] = 10 ** 5000\n    return graph",
    "    for n in list(graph.nodes)[:3]:\n"
    "        graph.nodes[n]['type'] = float('nan')\n    return graph",
    "    graph.add_edge('\\ud800', '\\x00', type=['RK_CONTAINS'])\n    return graph",
    "    def f(n):\n        return f(n + 1)\n    return f(0)",
    "    return -0.0",
    "    return 2 ** 63",
    "    return [1] * 10 ** 7",
)  # fmt: skip

LAB_CORPUS = (
    "ip -br addr", "ip route show", "ip route add 10.0.9.0/24 via 10.0.1.1",
    "ip route del default", "ip addr add 10.0.9.1/24 dev eth0", "ip link set eth0 up",
    "ip -6 rule add pref 100 prohibit", "ip neigh add proxy 10.0.0.9 dev eth0",
    "ip rule add from 10.0.0.0/8 table 7", "sysctl -w net.ipv4.ip_forward=1",
    "iptables -A FORWARD -s 10.0.1.0/24 -j DROP", "iptables -D FORWARD 1", "iptables -S",
    "iptables -I INPUT -p tcp -m multiport --dports 22,80,443 -j ACCEPT",
    "iptables -A INPUT -m comment --comment hello -j ACCEPT",
    "iptables -A INPUT -m string --string abc --algo bm -j DROP",
    "iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE", "iptables -F",
    "tc qdisc add dev eth0 root tbf rate 1mbit burst 32kbit latency 400ms",
    "tc qdisc show", "ping -c 1 -W 1 10.0.0.1", "arp -n", "ip -j route",
    "iptables -I FORWARD -m comment --comment note -j ACCEPT",
    "iptables -A OUTPUT -p udp -m string --string x --algo kmp -j DROP",
    "iptables -A INPUT -j LOG --log-prefix seen", "ip link set dev eth0 alias uplink",
)  # fmt: skip
VTYSH_CORPUS = (
    "vtysh -c 'show running-config'", "vtysh -c 'show ip ospf neighbor'",
    "vtysh -c 'show bgp summary json'",
    "vtysh -c 'configure terminal' -c 'router ospf' -c 'network 10.0.1.0/24 area 0'",
    "vtysh -c 'configure terminal' -c 'router bgp 65001' -c 'neighbor 10.0.0.2 remote-as 65002'",
    "vtysh -c 'configure terminal' -c 'router bgp 65001' -c 'neighbor 10.0.0.2 description peer'",
    "vtysh -c 'conf t' -c 'interface eth0' -c 'ip ospf cost 10'",
    "vtysh -c 'configure terminal' -c 'ip prefix-list p seq 5 permit 10.0.0.0/8 le 32'",
    "vtysh -d ospfd -c 'show ip ospf'", "vtysh -E -c 'show ip route'",
)  # fmt: skip
KUBECTL_CORPUS = (
    "kubectl get networkpolicies -A", "kubectl get pods -o wide",
    "kubectl describe networkpolicy adservice",
    "kubectl get networkpolicy adservice -o json", "kubectl delete networkpolicy adservice",
    "kubectl label namespace default a=b --overwrite", "kubectl api-resources",
    "kubectl explain networkpolicy.spec", "kubectl get ns --show-labels",
    "kubectl patch networkpolicy adservice --type=merge -p '{\"spec\":{\"podSelector\":{}}}'",
)  # fmt: skip
