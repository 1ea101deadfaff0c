"""What the fuzzer's mutations draw from: hostile values, FRR lines, YAML and Python.

The commands an operator of each app types (the seeds besides each query's oracle
replies) are the apps' knowledge: generators/benches/fuzz.py.
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
