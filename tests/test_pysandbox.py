"""Tests for emulators/pysandbox: normal answers, hostile code, limits and process cleanup."""

from __future__ import annotations

import copy
import decimal
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from emulators.pysandbox import GraphSandbox, SandboxLimits, bench, fastdiff, graphdiff
from emulators.pysandbox import sandbox as sandbox_module
from emulators.pysandbox.fastdiff import BaseIndex, graph_diff
from emulators.pysandbox.records import UnsupportedValue, encode_value, validate_record
from pipeline.core import StepStatus
from pipeline.errors import ConfigError

pytestmark = pytest.mark.integration

LIMITS = SandboxLimits(wall_timeout_s=3.0, cpu_time_s=1, memory_mb=512, output_bytes=4096)

# Reaches the `os` module's globals without importing anything: the classic escape.
ESCAPE = """
def _os():
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            return cls.__init__.__globals__
"""


def build_graph(size: int = 300) -> nx.DiGraph:
    """A small containment tree, shaped like a MALT topology."""
    graph = nx.DiGraph()
    for i in range(size):
        graph.add_node(f"n{i}", type="EK_PORT" if i % 7 else "EK_SWITCH", cap=i, tags=["a"])
        if i:
            graph.add_edge(f"n{(i - 1) // 3}", f"n{i}", type="RK_CONTAINS", w=1.5)
    return graph


def fn(body: str, prelude: str = "") -> str:
    """Source of a reply whose process_graph runs `body` (one statement per line)."""
    lines = "\n".join(f"    {line}" for line in body.splitlines())
    return f"{prelude}\ndef process_graph(graph):\n{lines}\n"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[GraphSandbox]:
    with GraphSandbox(build_graph(), LIMITS) as box:
        yield box


def pwned_path() -> Path:
    return Path(f"/tmp/pwned-{uuid.uuid4().hex}")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


# --- normal answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return 1", 1),
        ("return 2.5", 2.5),
        ("return 'n0'", "n0"),
        ("return None", None),
        ("return graph.has_node('n1')", True),
    ],
)
def test_scalar_answers(sandbox: GraphSandbox, body: str, expected: object) -> None:
    result = sandbox.run(fn(body))
    assert result.status is StepStatus.OK, result.error
    assert result.value == {"type": "scalar", "value": expected}
    assert result.error is None
    assert 0 <= result.exec_s < 1


def test_list_answers(sandbox: GraphSandbox) -> None:
    result = sandbox.run(fn("return sorted(graph.successors('n0'))"))
    assert result.value == {"type": "list", "value": ["n1", "n2", "n3"]}
    result = sandbox.run(fn("return tuple(range(3))"))
    assert result.value == {"type": "list", "value": [0, 1, 2]}
    result = sandbox.run(fn("return {'n1', 'n2'}"))
    assert result.status is StepStatus.OK
    assert sorted(result.value["value"]) == ["n1", "n2"]


def test_table_answer_and_stdout(sandbox: GraphSandbox) -> None:
    code = fn("print('counting')\nreturn {n: graph.out_degree(n) for n in ['n0', 'n200']}")
    result = sandbox.run(code)
    assert result.status is StepStatus.OK
    assert result.value == {"type": "table", "value": {"n0": 3, "n200": 0}}
    assert result.stdout == "counting\n"


def test_graph_answer_diff(sandbox: GraphSandbox) -> None:
    code = fn(
        "graph.remove_node('n299')\n"
        "graph.add_node('new', type='EK_PORT')\n"
        "graph.add_edge('n0', 'new')\n"
        "graph.nodes['n5']['cap'] = 500\n"
        "return graph"
    )
    result = sandbox.run(code)
    assert result.status is StepStatus.OK, result.error
    assert result.value["graph_class"] == "DiGraph"
    diff = result.value["diff"]
    assert diff["nodes_removed"] == ["n299"]
    assert diff["edges_removed"] == [["n99", "n299"]]
    assert diff["nodes_added"] == [["new", {"type": "EK_PORT"}]]
    assert diff["edges_added"] == [["n0", "new", {}]]
    assert diff["nodes_changed"] == [["n5", {"type": "EK_PORT", "cap": 500, "tags": ["a"]}]]
    # Each run gets a fresh copy of the base: the previous mutation is gone.
    again = sandbox.run(fn("return graph"))
    assert graphdiff.is_empty(again.value["diff"])


def test_a_value_answer_reports_the_graph_its_code_left(sandbox: GraphSandbox) -> None:
    """Issue 14: a question's code that edits the graph is judged on that edit too."""
    result = sandbox.run(fn("graph.remove_node('n299')\nreturn 1"))
    assert result.status is StepStatus.OK, result.error
    assert result.value == {"type": "scalar", "value": 1}
    assert result.state["nodes_removed"] == ["n299"]
    assert result.state["edges_removed"] == [["n99", "n299"]]
    cleared = sandbox.run(fn("graph.clear()\nreturn [len(graph)]"))
    assert cleared.value == {"type": "list", "value": [0]}
    assert len(cleared.state["nodes_removed"]) == 300
    assert sandbox.run(fn("return 1")).state is None  # unchanged: nothing to report
    assert sandbox.run(fn("graph.clear()\nreturn graph")).state is None  # the answer holds it


def test_new_graph_answer(sandbox: GraphSandbox) -> None:
    """A graph answer is the graph the code was given (issue 26): a new or copied graph
    returned is not it, and the record says so; the given graph's diff is what comes back."""
    body = "h = nx.Graph()\nh.add_node('n0', type='EK_SWITCH', cap=0, tags=['a'])\nreturn h"
    result = sandbox.run(fn(body, "import networkx as nx"))
    assert result.status is StepStatus.OK, result.error
    assert result.value["graph_class"] == "Graph" and result.value["copy"] is True
    assert graphdiff.is_empty(result.value["diff"])  # `graph` itself was left as it was
    copied = sandbox.run(fn("g = graph.copy()\ng.remove_node('n299')\nreturn g"))
    assert copied.value["copy"] is True and graphdiff.is_empty(copied.value["diff"])
    both = sandbox.run(fn("graph.remove_node('n299')\nreturn graph.copy()"))
    assert both.value["copy"] is True and both.value["diff"]["nodes_removed"] == ["n299"]
    same = sandbox.run(fn("graph.remove_node('n299')\nreturn graph"))
    assert "copy" not in same.value and same.value["diff"]["nodes_removed"] == ["n299"]


def test_allowed_libraries_work(sandbox: GraphSandbox) -> None:
    prelude = (
        "import copy, collections, dataclasses, enum, json, re, statistics, random\n"
        "import functools, heapq, typing, decimal, fractions\n"
        "import networkx as nx\n"
        "from networkx.algorithms import dag\n"
        "@dataclasses.dataclass\nclass Row:\n    name: str\n    cap: int\n"
        "class Kind(enum.Enum):\n    A = 1\n"
        "class Point(typing.NamedTuple):\n    x: int\n"
        "Pair = collections.namedtuple('Pair', 'a b')\n"
    )
    body = (
        "caps = [d['cap'] for _, d in graph.nodes(data=True)]\n"
        "return {'deep': copy.deepcopy({'a': [1]}), 'row': dataclasses.asdict(Row('x', 1)),\n"
        "  'kind': Kind.A.name, 'pair': list(Pair(1, 2)), 'point': Point(3).x,\n"
        "  'json': json.loads('[1]'), 're': re.findall(r'n[0-9]', 'n1 n2'),\n"
        "  'mean': statistics.mean(caps), 'rand': random.Random(4).random() < 1,\n"
        "  'lru': functools.lru_cache(None)(abs)(-2), 'heap': heapq.nsmallest(2, caps),\n"
        "  'paths': len(nx.shortest_path(graph, 'n0')), 'desc': len(nx.descendants(graph, 'n0')),\n"
        "  'dag': dag.is_directed_acyclic_graph(graph), 'bfs': nx.bfs_tree(graph, 'n0').order(),\n"
        "  'dec': str(decimal.Decimal('1.1') + 1), 'frac': str(fractions.Fraction(1, 3)),\n"
        "  'cc': nx.number_connected_components(graph.to_undirected()),\n"
        "  'relabel': nx.relabel_nodes(graph, {'n0': 'root'}).has_node('root')}"
    )
    result = sandbox.run(fn(body, prelude))
    assert result.status is StepStatus.OK, result.error
    value = result.value["value"]
    assert value["paths"] == 300 and value["cc"] == 1 and value["relabel"] is True
    assert value["row"] == {"name": "x", "cap": 1} and value["frac"] == "1/3"
    assert result.blocked == []


# --- agent mistakes -------------------------------------------------------------------


def test_syntax_error(sandbox: GraphSandbox) -> None:
    result = sandbox.run("def process_graph(graph)\n    return 1\n")
    assert result.status is StepStatus.EXEC_ERROR
    assert result.error.startswith("syntax error") and "line 1" in result.error


def test_missing_entry(sandbox: GraphSandbox) -> None:
    result = sandbox.run("def solve(graph):\n    return 1\n")
    assert result.status is StepStatus.EXEC_ERROR
    assert result.error == "the reply defines no function process_graph(graph)"


def test_exception_has_traceback_tail(sandbox: GraphSandbox) -> None:
    result = sandbox.run(fn("x = 1\nreturn graph.nodes['missing']"))
    assert result.status is StepStatus.EXEC_ERROR
    assert result.error.startswith("KeyError: 'missing'")
    assert "<reply>\", line 4, in process_graph: return graph.nodes['missing']" in result.error


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("return object()", "unsupported type 'object'"),
        ("return [1, object()]", "unsupported type 'object'"),
        ("return float('nan')", "non-finite float"),
        ("graph.nodes['n1']['cap'] = float('inf')\nreturn graph", "not valid JSON: Out of range"),
        ("exit(3)", "SystemExit(3)"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("def f(n):\n    return f(n + 1)\nreturn f(0)", "RecursionError"),
    ],
)
def test_exec_errors(sandbox: GraphSandbox, body: str, needle: str) -> None:
    result = sandbox.run(fn(body))
    assert result.status is StepStatus.EXEC_ERROR, result.error
    assert needle in result.error


def test_sys_exit_via_escape(sandbox: GraphSandbox) -> None:
    result = sandbox.run(fn("_os()['sys'].exit(4)", ESCAPE))
    assert result.status is StepStatus.EXEC_ERROR
    assert "SystemExit(4)" in result.error


# --- limits ---------------------------------------------------------------------------


def test_cpu_limit(sandbox: GraphSandbox) -> None:
    result = sandbox.run(fn("while True:\n    pass"))
    assert result.status is StepStatus.TIMEOUT
    assert result.error == "CPU-time limit of 1 s exceeded"


def test_wall_clock_limit() -> None:
    limits = SandboxLimits(wall_timeout_s=1.0, cpu_time_s=30)
    with GraphSandbox(build_graph(20), limits) as box:
        started = time.monotonic()
        result = box.run(fn("_os()['sys'].modules['time'].sleep(30)", ESCAPE))
        assert time.monotonic() - started < 5
        assert result.status is StepStatus.TIMEOUT
        assert result.error == "wall-clock limit of 1 s exceeded"
        assert box.run(fn("return 1")).status is StepStatus.OK


@pytest.fixture(scope="module")
def roomy() -> Iterator[GraphSandbox]:
    """Generous CPU time, so filling memory (page faults cost CPU) hits the memory limit."""
    with GraphSandbox(build_graph(), SandboxLimits(wall_timeout_s=20, cpu_time_s=15)) as box:
        yield box


@pytest.mark.parametrize(
    "body",
    [
        "x = bytearray(10**10)",
        "x = []\nwhile True:\n    x.append(' ' * 10**6)",
        "x = []\nwhile True:\n    x.append([0] * 10**6)",
    ],
)
def test_memory_limit(roomy: GraphSandbox, body: str) -> None:
    result = roomy.run(fn(body + "\nreturn 1"))
    assert result.status is StepStatus.RESOURCE_LIMIT
    assert "memory limit of 1024 MB exceeded" in result.error
    assert roomy.run(fn("return 1")).status is StepStatus.OK


def test_huge_stdout_is_cut(sandbox: GraphSandbox) -> None:
    result = sandbox.run(fn("print('x' * 10_000_000)\nreturn 1"))
    assert result.status is StepStatus.OK
    assert result.value == {"type": "scalar", "value": 1}
    assert len(result.stdout) < LIMITS.output_bytes + 200
    assert "[output cut: kept the first 4096 bytes of 10000001 characters]" in result.stdout


@pytest.mark.parametrize("body", ["return ['x' * 1000] * 100_000", "return list(range(10**7))"])
def test_huge_result(sandbox: GraphSandbox, body: str) -> None:
    result = sandbox.run(fn(body))
    assert result.status is StepStatus.RESOURCE_LIMIT
    assert "result limit" in result.error


def test_oversized_code(sandbox: GraphSandbox) -> None:
    result = sandbox.run("#" * (LIMITS.code_bytes + 1))
    assert result.status is StepStatus.EXEC_ERROR
    assert "over the limit" in result.error


# --- hostile code ---------------------------------------------------------------------


def test_os_system_is_blocked(sandbox: GraphSandbox) -> None:
    target = pwned_path()
    result = sandbox.run(fn(f"return os.system('touch {target}')", "import os"))
    assert result.status is StepStatus.BLOCKED
    assert result.error.startswith("blocked: import of module 'os' is not allowed")
    assert not target.exists()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("return __import__('subprocess').run(['id'])", "import of module 'subprocess'"),
        ("import socket\nsocket.create_connection(('127.0.0.1', 22))", "module 'socket'"),
        ("import ctypes\nreturn ctypes.CDLL(None)", "import of module 'ctypes'"),
        ("from . import x", "relative imports"),
        ("return open('/etc/passwd').read()", "file access is not allowed (open '/etc/passwd')"),
        ("return open('/tmp/pwned-write', 'w').write('x')", "file access is not allowed"),
        ("import numpy", "import of module 'numpy'"),
    ],
)
def test_refused_imports_and_files(sandbox: GraphSandbox, body: str, needle: str) -> None:
    result = sandbox.run(fn(body))
    assert result.status is StepStatus.BLOCKED, result.error
    assert result.error.startswith("blocked: ") and needle in result.error
    assert not Path("/tmp/pwned-write").exists()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            "return _os()['system']('touch {target}')",
            "starting processes is not allowed (os.system)",
        ),
        ("return _os()['fork']()", "starting processes is not allowed (os.fork)"),
        ("return _os()['execv']('/bin/sh', ['sh'])", "starting processes is not allowed (os.exec)"),
        ("return _os()['kill'](_os()['getppid'](), 9)", "sending signals is not allowed (os.kill)"),
        ("return _os()['open']('{target}', 65)", "file access is not allowed"),
        ("return _os()['listdir']('/')", "filesystem operation 'os.listdir'"),
        ("return _os()['remove']('/etc/hostname')", "filesystem operation 'os.remove'"),
        (
            "s = _os()['sys'].modules['socket'].socket()\ns.connect(('127.0.0.1', 22))",
            "network access is not allowed (socket.__new__)",
        ),
        ("return _os()['sys'].modules['gc'].get_objects()", "'gc.get_objects'"),
        ("f = lambda: 1\nf.__code__ = (lambda: 2).__code__", "replacing a function's __code__"),
        ("return (lambda: 1).__code__.replace(co_consts=(2,))", "'code.__new__'"),
    ],
)
def test_escapes_are_blocked(sandbox: GraphSandbox, body: str, needle: str) -> None:
    target = pwned_path()
    result = sandbox.run(fn(body.format(target=target), ESCAPE))
    assert result.status is StepStatus.BLOCKED, result.error
    assert needle in result.error
    assert not target.exists()


def test_no_second_audit_hook(sandbox: GraphSandbox) -> None:
    # CPython swallows a refusal of sys.addaudithook; what matters is that no hook was added.
    body = "seen = []\n_os()['sys'].addaudithook(lambda e, a: seen.append(e))\nid(1)\nreturn seen"
    result = sandbox.run(fn(body, ESCAPE))
    assert result.value == {"type": "list", "value": []}
    assert result.blocked == ["blocked: operation 'sys.addaudithook' is not allowed"]


def test_caught_refusal_is_just_an_answer(sandbox: GraphSandbox) -> None:
    target = pwned_path()
    body = (
        f"try:\n    _os()['system']('touch {target}')\n"
        "except PermissionError as exc:\n    return str(exc)"
    )
    result = sandbox.run(fn(body, ESCAPE))
    assert result.status is StepStatus.OK
    assert result.value["value"] == "blocked: starting processes is not allowed (os.system)"
    assert result.blocked == ["blocked: starting processes is not allowed (os.system)"]
    assert not target.exists()


def test_import_fallback_works(sandbox: GraphSandbox) -> None:
    body = "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nreturn numpy is None"
    result = sandbox.run(fn(body))
    assert result.value == {"type": "scalar", "value": True}
    assert result.blocked[0].startswith("blocked: import of module 'numpy' is not allowed")


@pytest.mark.parametrize(
    ("report", "needle"),
    [
        (b'{"status":"env_error","error":"infra"}\n', "may not report status 'env_error'"),
        (b'{"status":"ok","stdout":""}\n{"type":"graph","graph_class":"G","diff":{}}', "keys"),
        (b"\x80garbage", "malformed result"),
    ],
)
def test_forged_reports_are_rejected(sandbox: GraphSandbox, report: bytes, needle: str) -> None:
    body = f"_os()['write'](3, {report!r})\n_os()['_exit'](0)"
    result = sandbox.run(fn(body, ESCAPE))
    assert result.status is StepStatus.EXEC_ERROR
    assert needle in result.error


def test_zygote_survives_hostile_runs(sandbox: GraphSandbox) -> None:
    pids = sandbox.pids
    sandbox.run(fn("return _os()['kill'](1, 9)", ESCAPE))
    sandbox.run(fn("return _os()['killpg'](0, 9)", ESCAPE))
    assert sandbox.pids == pids and all(alive(pid) for pid in pids)
    result = sandbox.run(fn("return graph.number_of_nodes()"))
    assert result.value == {"type": "scalar", "value": 300}


# --- isolation and process lifetime -----------------------------------------------------


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the sandbox tests as root to check netns/chroot/setuid")
        pytest.skip("not root: the netns, chroot and setuid layers are not used")


def test_isolation_layers(sandbox: GraphSandbox) -> None:
    require_root()
    for layer in ("netns", "pidns", "chroot", "setuid", "rlimits", "audit"):
        assert layer in sandbox.isolation.split("+")
    own_net = os.readlink("/proc/self/ns/net")
    assert all(os.readlink(f"/proc/{pid}/ns/net") != own_net for pid in sandbox.pids)


def test_unprivileged_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "_has_root", lambda: False)
    target = pwned_path()
    with GraphSandbox(build_graph(20), LIMITS) as box:
        assert "not root: no netns/pidns/chroot/setuid" in box.isolation
        assert box.run(fn("return graph.order()")).value == {"type": "scalar", "value": 20}
        result = box.run(fn(f"return _os()['system']('touch {target}')", ESCAPE))
        assert result.status is StepStatus.BLOCKED
        assert not target.exists()


def test_zygote_restarts_after_dying() -> None:
    with GraphSandbox(build_graph(20), LIMITS) as box:
        first = box.pids
        for pid in first:  # killed between runs: restarted without a failed run
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert box.run(fn("return 1")).status is StepStatus.OK
        assert box.pids != first
        # Killed during a run: that run is an ENV_ERROR, the next one works again.
        killer = threading.Timer(0.5, lambda: [os.kill(pid, signal.SIGKILL) for pid in box.pids])
        killer.start()
        result = box.run(fn("while True:\n    pass"))
        killer.join()
        assert result.status is StepStatus.ENV_ERROR
        assert "zygote" in result.error
        assert box.run(fn("return 2")).value == {"type": "scalar", "value": 2}


def test_exit_leaves_no_process_or_files() -> None:
    box = GraphSandbox(build_graph(20), LIMITS)
    with box:
        pids = box.pids
        tmpdir = box._resources.tmpdir
        assert pids and all(alive(pid) for pid in pids)
        box.run(fn("return 1"))
    assert not any(alive(pid) for pid in pids)
    assert tmpdir is not None and not tmpdir.exists()
    assert box.pids == []


def test_parent_crash_leaves_no_orphans() -> None:
    script = (
        "import os, signal\n"
        "from emulators.pysandbox import GraphSandbox\n"
        "from tests.test_pysandbox import build_graph\n"
        "box = GraphSandbox(build_graph(5)).__enter__()\n"
        "print(box._resources.tmpdir, *box.pids, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    repo = Path(__file__).resolve().parents[1]
    crashed = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    tmpdir, *pids = crashed.stdout.split()
    assert pids
    deadline = time.monotonic() + 5
    while (
        Path(tmpdir).exists() or any(alive(int(p)) for p in pids)
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(int(pid)) for pid in pids)
    assert not Path(tmpdir).exists()  # the orphaned zygote removed it


def test_parent_environment_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETGAUGE_TEST_SECRET", "hunter2")
    with GraphSandbox(build_graph(5), LIMITS) as box:
        result = box.run(fn("return dict(_os()['environ'])", ESCAPE))
    assert result.status is StepStatus.OK
    assert "NETGAUGE_TEST_SECRET" not in result.value["value"]


def test_bench_reports_overheads() -> None:
    figures = bench.run_all(runs=3, warmup=1)
    assert figures["graph_nodes"] == 5485
    assert 0 < figures["overhead_return_1_median_s"] < figures["run_graph_remove_node_median_s"]
    assert figures["target_overhead_s"] == 0.02


def test_bad_limits_fail_early() -> None:
    with pytest.raises(ConfigError, match="cpu_time_s"):
        GraphSandbox(build_graph(5), SandboxLimits(cpu_time_s=0))
    with pytest.raises(ConfigError, match="identifier"):
        GraphSandbox(build_graph(5), entry="not valid")


# --- records ----------------------------------------------------------------------------


class _Label(str):
    """A str subclass: equal to its plain value, but not the same type."""


def _mutate(graph: nx.DiGraph, rng: random.Random) -> None:
    nodes = sorted(graph.nodes, key=str)
    node = rng.choice(nodes)
    attrs = graph.nodes[node]
    kind = rng.randrange(12)
    if kind == 0:
        attrs["cap"] = float(attrs.get("cap", 0))  # equal value, other type
    elif kind == 1:
        attrs["cap"] = decimal.Decimal(attrs.get("cap", 0))
    elif kind == 2:
        attrs["tags"] = tuple(attrs.get("tags", []))
    elif kind == 3:
        attrs.setdefault("tags", []).append("b")  # nested, in place
    elif kind == 4:
        items = list(attrs.items())
        attrs.clear()
        attrs.update(reversed(items))  # same mapping, other key order
    elif kind == 5:
        attrs["type"] = _Label(attrs.get("type", ""))
    elif kind == 6:
        attrs["x"] = rng.choice([float("nan"), -0.0, 0, True, 1, None, {"k": [1, 2.5]}])
    elif kind == 7:
        graph.remove_node(node)
    elif kind == 8:
        graph.add_node(rng.choice(["new", 7, ("t", 1)]), cap=rng.random())
    elif kind == 9:
        graph.add_edge(node, rng.choice(nodes), w=rng.choice([1.5, 2, "x"]))
    elif kind == 10 and graph.out_degree(node):
        succ = next(iter(graph.successors(node)))
        graph.edges[node, succ]["w"] = rng.choice([1.5, 1.50, 3, float("nan")])
    elif kind == 11 and graph.out_degree(node):
        graph.remove_edge(node, next(iter(graph.successors(node))))


def _reorder(attrs: dict) -> None:
    items = list(attrs.items())
    attrs.clear()
    attrs.update(reversed(items))


# Each edits a fresh copy of the base; the ones that look unchanged are the risky ones.
# The targets sit outside the first fingerprint chunk, which the NaN keeps on the slow path.
EDGE_CASES = {
    "new NaN object": lambda g: g.nodes["n1"].update(x=float("nan")),
    "same NaN object": lambda g: g.nodes["n1"].update(x=g.nodes["n1"]["x"]),
    "int to float": lambda g: g.nodes["n203"].update(cap=203.0),
    "int to Decimal": lambda g: g.nodes["n203"].update(cap=decimal.Decimal(203)),
    "int to bool": lambda g: g.nodes["n201"].update(tags=[True]),
    "list to tuple": lambda g: g.nodes["n204"].update(tags=("a",)),
    "str subclass": lambda g: g.nodes["n205"].update(type=_Label(g.nodes["n205"]["type"])),
    "-0.0 to 0": lambda g: g.nodes["n202"].update(z=0),
    "0 to -0.0": lambda g: g.nodes["n0"].update(cap=-0.0),
    "key order": lambda g: _reorder(g.nodes["n206"]),
    "nested append": lambda g: g.nodes["n207"]["tags"].append("b"),
    "edge float to complex": lambda g: g.edges["n66", "n200"].update(w=1.5 + 0j),
    "int twin of a str node": lambda g: g.add_node(7, cap=7.5),
    "int twin of a str edge": lambda g: g.add_edge("n0", 7, w=2),
    "multigraph": nx.MultiDiGraph,
    "undirected": lambda g: g.to_undirected(),
    "reverse view": lambda g: g.reverse(copy=False),
    "subgraph view": lambda g: g.subgraph([f"n{i}" for i in range(0, 400, 2)]),
}


def _nan_base() -> nx.DiGraph:
    base = build_graph(400)  # several fingerprint chunks of nodes and of edges
    base.nodes["n1"]["x"] = float("nan")  # compute_diff compares NaN by identity
    base.nodes["n202"]["z"] = -0.0
    base.add_node("7", cap=7)  # an int node 7 in an answer shares its name
    base.add_edge("n0", "7", w=1)
    return base


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_fast_graph_diff_edge_cases(case: str) -> None:
    base = _nan_base()
    index = BaseIndex(base)
    for graph in (copy.deepcopy(base), base.copy()):
        # Untouched, every chunk but the NaN one is recognised as unchanged.
        assert len(fastdiff._unchanged(index.node_chunks, graph._node.get)) == 401 - 128
        answer = EDGE_CASES[case](graph) or graph
        assert graph_diff(index, answer) == graphdiff.compute_diff(index.snapshot, answer)


def test_fast_graph_diff_matches_compute_diff() -> None:
    base = _nan_base()
    index = BaseIndex(base)
    rng = random.Random(1234)
    for _ in range(300):
        graph = copy.deepcopy(base)
        for _ in range(rng.randint(0, 4)):
            _mutate(graph, rng)
        if rng.random() < 0.1:
            graph = graph.to_undirected()
        assert graph_diff(index, graph) == graphdiff.compute_diff(index.snapshot, graph)


@pytest.mark.parametrize("case", sorted(set(EDGE_CASES) - {"same NaN object"}))
def test_an_unchanged_graph_is_recognised_only_when_the_diff_is_empty(case: str) -> None:
    """The cheap check behind a value answer's `state`: True only when the diff is empty."""
    base = build_graph(400)
    index = BaseIndex(base)
    for graph in (copy.deepcopy(base), base.copy()):
        assert fastdiff.is_unchanged(index, graph)
        answer = EDGE_CASES[case](graph) or graph
        if fastdiff.is_unchanged(index, answer):
            assert graphdiff.is_empty(graphdiff.compute_diff(index.snapshot, answer))
    assert not fastdiff.is_unchanged(BaseIndex(_nan_base()), _nan_base())  # NaN: never


class _FakeNumpyScalar:
    def item(self) -> int:
        return 7


def test_records_encode_and_validate() -> None:
    base = BaseIndex(build_graph(5))
    assert encode_value(_FakeNumpyScalar(), base, 100) == {"type": "scalar", "value": 7}
    assert encode_value({1: {2}}, base, 100) == {"type": "table", "value": {"1": [2]}}
    with pytest.raises(UnsupportedValue, match="non-finite"):
        encode_value(float("inf"), base, 100)
    for bad in ({"type": "scalar", "value": [1]}, {"type": "list", "value": 1}, {"type": "x"}):
        with pytest.raises(ValueError):
            validate_record(bad)
    state = graphdiff.empty_diff()
    assert validate_record({"type": "scalar", "value": 1, "state": state})["state"] == state
    copied = {"type": "graph", "graph_class": "DiGraph", "diff": state, "copy": True}
    assert validate_record(copied)["copy"] is True
    for bad in (
        {"type": "scalar", "value": 1, "state": {}},
        {"type": "graph", "graph_class": "DiGraph", "diff": state, "state": state},
        {**copied, "copy": False},
        {"type": "scalar", "value": 1, "copy": True},
    ):
        with pytest.raises(ValueError):
            validate_record(bad)
