"""The MALT sandbox's hostile suite: agent replies an attacker would write, and a runner.

Each entry is (name, body of process_graph(graph), statuses allowed with the audit hook).
`{mark}` in a body is a file path the reply tries to create, `{victim}` the pid of a process
of the same uid outside the sandbox that it tries to hurt. Whatever the status, the effect
must be nil: no mark, the victim alive, no SysV segment left, memory given back.

    python -m tests.pysandbox_hostile [--no-audit-hook] MARK_DIR VICTIM_PID  # prints JSON

The runner is also how the suite runs without root (tests/test_pysandbox_hostile.py starts
it as uid 65534).
"""

from __future__ import annotations

import json
import sys
import time

import networkx as nx

from emulators.pysandbox import GraphSandbox, SandboxLimits

B, E, R, T, OK = "blocked", "exec_error", "resource_limit", "timeout", "ok"
_OS = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
OS = f"{_OS}.__init__.__globals__"  # the os module's globals, reached without importing
SYS = f"{OS}['sys']"  # and sys, and through sys.modules every module already loaded
TIME = f"{SYS}.modules['time']"

HOSTILE: list[tuple[str, str, set[str]]] = [
    # ctypes, in every way it could be reached: it is not loaded, and cannot be.
    ("import ctypes", "import ctypes\nreturn 1", {B}),
    ("import _ctypes", "import _ctypes\nreturn 1", {B}),
    ("__import__ ctypes", "return __import__('ctypes').CDLL", {B}),
    ("importlib ctypes", "import importlib\nreturn importlib.import_module('ctypes')", {B}),
    ("sys.modules ctypes", f"return {OS}['sys'].modules['ctypes']", {E}),
    ("sys.modules _ctypes", f"return {OS}['sys'].modules['_ctypes']", {E}),
    (
        "subclasses CDLL",
        "return [c for c in object.__subclasses__() if 'CData' in c.__name__]",
        {OK},
    ),
    (
        "builtins import ctypes",
        "return __builtins__['__import__']('ctypes')"
        " if isinstance(__builtins__, dict) else __builtins__.__import__('ctypes')",
        {B},
    ),
    ("exec import ctypes", "exec('import ctypes')\nreturn 1", {B}),
    ("loader ctypes", f"return {OS}['sys'].meta_path[0].find_spec('ctypes', None)", {B, E, OK}),
    (
        "importlib bootstrap",
        f"b = {OS}['sys'].modules['importlib._bootstrap']\n"
        "return b._find_and_load('ctypes', b._gcd_import)",
        {B, E},
    ),
    # Signals and controls aimed at other processes.
    ("kill victim", f"return {OS}['kill']({{victim}}, 9)", {B}),
    ("kill parent", f"return {OS}['kill']({OS}['getppid'](), 9)", {B}),
    ("kill all", f"return {OS}['kill'](-1, 9)", {B}),
    ("killpg", f"return {OS}['killpg']({{victim}}, 9)", {B}),
    ("pidfd", f"return {OS}['pidfd_open']({{victim}})", {B, E}),
    ("setpriority", f"return {OS}['setpriority']({OS}['PRIO_PROCESS'], {{victim}}, 19)", {B, E}),
    ("sched_setaffinity", f"return {OS}['sched_setaffinity']({{victim}}, {{0}})", {B, E}),
    (
        "prlimit victim",
        "import resource\nreturn resource.prlimit({victim}, resource.RLIMIT_NOFILE, (0, 0))",
        {B},
    ),
    ("signal module", "import signal\nreturn signal.pthread_kill(1, 9)", {B}),
    ("os.system kill", f"return {OS}['system']('kill -9 {{victim}}')", {B}),
    ("subprocess kill", "import subprocess\nreturn subprocess.run(['kill', '{victim}'])", {B}),
    ("setpgid", f"return {OS}['setpgid']({{victim}}, 0)", {B, E}),
    # Memory: past the limit, and held after the run.
    ("bytearray 2G", "return len(bytearray(2 << 30))", {R}),
    ("string 2G", "return len('x' * (2 << 30))", {R}),
    ("list growth", "a = []\nwhile True:\n    a.append(bytes(1 << 20))", {R}),
    ("dict growth", "d = {}\ni = 0\nwhile True:\n    d[i] = [i] * 1000\n    i += 1", {R, T}),
    ("bytes 10G", "return len(bytes(10 << 30))", {R}),
    ("mmap module", "import mmap\nm = mmap.mmap(-1, 2 << 30)\nreturn 1", {B}),
    ("posix shm", "import _posixshmem\nreturn 1", {B}),
    # SysV shared memory has no stdlib binding; a tool that makes a segment is a process.
    (
        "sysv shm via ipcmk",
        "import subprocess\nreturn subprocess.run(['ipcmk', '-M', str(1 << 30)]).returncode",
        {B},
    ),
    (
        "multiprocessing shm",
        "from multiprocessing import shared_memory\n"
        "return shared_memory.SharedMemory(create=True, size=1 << 30).name",
        {B},
    ),
    (
        "deep recursion",
        f"{SYS}.setrecursionlimit(10**7)\nf = lambda n: f(n + 1)\nreturn f(0)",
        {E, R, B, T},
    ),
    # Timings and reports: the child's claims are not measurements.
    ("forged timing", f"{TIME}.sleep(3)\n{OS}['write'](3, b'')\nreturn 1", {OK}),
    (
        "forged report",
        f"{OS}['write'](3, b'S{{\"status\": \"ok\", \"exec_s\": 0}}\\n1')\n{OS}['_exit'](0)",
        {E, OK},
    ),
    (
        "forged timeout",
        f'{OS}[\'write\'](3, b\'S{{"status": "timeout", "error": "x"}}\\n\')\n{OS}[\'_exit\'](0)',
        {E},
    ),
    (
        "forged env error",
        f"{OS}['write'](3, b'S{{\"status\": \"env_error\"}}\\n')\n{OS}['_exit'](0)",
        {E},
    ),
    ("garbage report", f"{OS}['write'](3, bytes(range(256)) * 100)\n{OS}['_exit'](0)", {E}),
    # Processes and threads.
    ("fork", f"return {OS}['fork']()", {B}),
    ("thread", "import threading\nt = threading.Thread(target=print)\nt.start()\nreturn 1", {B}),
    ("_thread", "import _thread\nreturn _thread.start_new_thread(print, ())", {B}),
    ("posix_spawn", f"return {OS}['posix_spawn']('/bin/sh', ['sh'], {{}})", {B}),
    ("subprocess", "import subprocess\nreturn subprocess.run(['id']).returncode", {B}),
    ("execv", f"return {OS}['execv']('/bin/sh', ['sh', '-c', 'touch {{mark}}'])", {B}),
    # Files.
    ("open passwd", "return open('/etc/passwd').read()", {B}),
    ("open root", "return open('/root/.bashrc').read()", {B}),
    ("write tmp", "open('{mark}', 'w').write('x')\nreturn 1", {B}),
    ("os.open", f"return {OS}['open']('{{mark}}', 65)", {B}),
    ("listdir", f"return {OS}['listdir']('/')", {B}),
    ("io.open", "import io\nreturn io.open('/etc/hostname').read()", {B}),
    ("pathlib", "import pathlib\nreturn pathlib.Path('/etc/hostname').read_text()", {B}),
    ("stat probe", f"return {OS}['stat']('/etc/shadow').st_size", {B, E}),
    # Network.
    ("socket", "import socket\nreturn socket.socket()", {B}),
    (
        "socket via modules",
        f"s = {OS}['sys'].modules.get('socket')\nreturn s.socket() if s else 0",
        {B, OK},
    ),
    ("urllib", "import urllib.request\nreturn urllib.request.urlopen('http://127.0.0.1')", {B}),
    # The interpreter's own guards.
    # CPython drops a new hook silently when the existing one refuses it: OK, and no hook.
    ("second audit hook", f"{SYS}.addaudithook(lambda *a: None)\nreturn 1", {B, OK}),
    ("settrace", f"{SYS}.settrace(lambda *a: None)\nreturn 1", {B}),
    ("code swap", "f = lambda: 1\nf.__code__ = (lambda: 2).__code__\nreturn f()", {B}),
    ("gc objects", "import gc\nreturn len(gc.get_objects())", {B}),
    ("frame globals", f"return sorted({SYS}._getframe(1).f_globals)[:3]", {OK, E}),
    (
        "builtins override",
        "import builtins\nbuiltins.__import__ = lambda *a, **k: None\nimport os\nreturn 1",
        {B, E},
    ),
    # Time and output.
    ("busy loop", "while True:\n    pass", {T}),
    ("sleep forever", f"{TIME}.sleep(3600)", {T}),
    ("print flood", "while True:\n    print('x' * 1000)", {T, R, OK}),
    ("huge result", "return ['x' * 1000] * 100000", {R}),
    ("pipe hoard", f"return [{OS}['pipe']() for _ in range(10000)]", {B, E}),
]


def program(body: str, mark: str, victim: int) -> str:
    victim_slot = "{" + "victim}"  # the placeholder, not an f-string
    text = body.replace("{mark}", mark).replace(victim_slot, str(victim))
    indented = "\n".join("    " + line for line in text.splitlines())
    return f"def process_graph(graph):\n{indented}\n"


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for i in range(200):
        g.add_node(f"n{i}", type="EK_PACKET_SWITCH", capacity=i)
        if i:
            g.add_edge(f"n{i - 1}", f"n{i}", type="RK_CONTAINS")
    return g


def run_suite(mark_dir: str, victim: int, audit_hook: bool = True) -> list[dict]:
    limits = SandboxLimits(wall_timeout_s=5, cpu_time_s=3, memory_mb=384, output_bytes=4096)
    out = []
    with GraphSandbox(graph(), limits, audit_hook=audit_hook) as box:
        for name, body, _ in HOSTILE:
            started = time.perf_counter()
            got = box.run(program(body, f"{mark_dir}/{name.replace(' ', '_')}", victim))
            out.append({
                "name": name, "status": got.status.value, "error": got.error,
                "exec_s": got.exec_s, "wall_s": time.perf_counter() - started,
                "isolation": box.isolation,
            })  # fmt: skip
    return out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-audit-hook"]
    json.dump(run_suite(args[0], int(args[1]), "--no-audit-hook" not in sys.argv), sys.stdout)
