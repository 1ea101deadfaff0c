"""What a hostile suite must leave exactly as it found it: a snapshot of the host, and a diff.

A snapshot holds the root network namespace (links, addresses, routes of every table, rules,
permanent neighbours, qdiscs, the nftables/iptables rulesets, the named namespaces), every
readable key under /proc/sys/net and /proc/sys/kernel, the files under /tmp, /root and /etc
(path, type, size, mode, mtime), the processes (pid and start time, uid, command line) and
the loaded kernel modules (/proc/modules). Take one before an environment starts and one
after it stopped; `diff` lists what differs:

    before = hoststate.snapshot()
    ... start a lab, play hostile replies, stop it ...
    assert hoststate.diff(before, hoststate.snapshot()) == []

Keys the kernel changes by itself and pytest's own temporary folders are left out (listed
below, each with its reason); of the processes only the one taking the snapshot is: a
process the test run started during a suite and left running is a difference like any
other, while its helpers started before the first snapshot appear in both.

Processes and files are compared for what the project could have done: the first snapshot
starts a `tests.hostwatch.Tracker`, which follows from the kernel every process that
descends from this test process (through setsid, double forks, namespaces, other uids) and
every file those processes create, delete, move or write. A process difference is kept
when the process is (or was) one of them, a file difference when one of them touched that
path; other users' processes and files under /tmp come and go unseen. The network,
sysctls and kernel modules are compared whole. As root on a kernel with the proc connector
and fanotify (CI's); elsewhere, and if the kernel dropped events, everything is compared,
as before: then run the suites on a quiet machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hostwatch import Tracker

SYSCTL_TOPS = ("/proc/sys/net", "/proc/sys/kernel")
# The kernel changes these by itself: a counter of the last pid handed out, a fresh uuid
# on every read, the entropy estimate, the conntrack entry count (expiring flows), the
# pty pairs in use (every terminal and node shell on the machine).
VOLATILE_KEYS = frozenset(
    {
        "/proc/sys/kernel/ns_last_pid",
        "/proc/sys/kernel/pty/nr",
        "/proc/sys/kernel/random/uuid",
        "/proc/sys/kernel/random/entropy_avail",
        "/proc/sys/net/netfilter/nf_conntrack_count",
    }
)
FILE_TOPS = ("/tmp", "/root", "/etc")
# The test run's own scratch space and caches it may fill: pytest's basetemp, Python's
# bytecode caches, and the journal of tools the tests themselves call.
IGNORED_FILES = ("/tmp/pytest-of-", "/root/.cache/", "/root/.config/matplotlib")
NETWORK_COMMANDS = {
    "links": ["ip", "-j", "-d", "link", "show"],
    "addresses": ["ip", "-j", "addr", "show"],
    "routes4": ["ip", "-j", "-4", "route", "show", "table", "all"],
    "routes6": ["ip", "-j", "-6", "route", "show", "table", "all"],
    "rules4": ["ip", "-j", "-4", "rule", "show"],
    "rules6": ["ip", "-j", "-6", "rule", "show"],
    "neighbours": ["ip", "-j", "neigh", "show", "nud", "permanent"],
    "qdiscs": ["tc", "-j", "qdisc", "show"],
    "nftables": ["nft", "list", "ruleset"],
    "iptables": ["iptables-save"],
    "ip6tables": ["ip6tables-save"],
    "netns": ["ip", "netns", "list"],
}
# Counters and timers in `ip -j -d link` output that move with traffic or time.
_LINK_NOISE = ("stats", "stats64", "linkinfo_data_stats")


@dataclass
class HostState:
    network: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple] = field(default_factory=dict)
    processes: dict[tuple[int, int], tuple[int, str]] = field(default_factory=dict)
    modules: str = ""  # /proc/modules, names and states (sizes and use counts move)
    tracker: Tracker | None = None  # whose processes and files are ours (None: all are)


_tracker: list[Tracker | None] = []  # the session's, started by the first snapshot


def tracker() -> Tracker | None:
    if not _tracker:
        _tracker.append(Tracker.start(FILE_TOPS))
    return _tracker[0]


def _run(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"<{argv[0]} failed: {err}>"
    text = out.stdout
    if argv[:2] == ["ip", "-j"] or argv[:2] == ["tc", "-j"]:
        with contextlib.suppress(ValueError):  # not JSON: compare the text as it is
            text = json.dumps(_strip(json.loads(text or "[]")), sort_keys=True)
    elif argv[0].endswith("-save"):
        # iptables-save prints a timestamp comment and packet counters.
        text = "\n".join(
            line.split(" [")[0] if line.startswith(":") else line
            for line in text.splitlines()
            if not line.startswith("#")
        )
    return text


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _LINK_NOISE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _sysctls() -> dict[str, str]:
    out = {}
    for top in SYSCTL_TOPS:
        for root, _, names in os.walk(top):
            for name in names:
                path = os.path.join(root, name)
                if path in VOLATILE_KEYS:
                    continue
                try:
                    with open(path) as f:
                        out[path] = f.read()
                except OSError:
                    continue  # write-only or refused keys
    return out


def _ignored(path: str) -> bool:
    base = tempfile.gettempdir()
    return path.startswith(IGNORED_FILES) or path.startswith(f"{base}/pytest-of-")


def _files() -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for top in FILE_TOPS:
        for root, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not _ignored(os.path.join(root, d) + "/")]
            for name in [*names, *dirs]:
                path = os.path.join(root, name)
                if _ignored(path):
                    continue
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                kind = "dir" if name in dirs else "file"
                size = st.st_size if kind == "file" else 0
                out[path] = (
                    kind,
                    size,
                    st.st_mode,
                    st.st_uid,
                    st.st_mtime_ns if kind == "file" else 0,
                )
    return out


def _modules() -> str:
    """The loaded kernel modules, one name a line; "<no module support>" on a kernel
    without CONFIG_MODULES (nothing can be loaded there)."""
    try:
        text = Path("/proc/modules").read_text()
    except FileNotFoundError:
        return "<no module support>"
    return "\n".join(sorted(line.split(" ", 1)[0] for line in text.splitlines() if line))


def _processes() -> dict[tuple[int, int], tuple[int, str]]:
    """Every process but this one, by (pid, start time): a pid reused for another process
    is another key. Processes this test run started are included, so that one started
    during a suite and still running after it (a leak) shows up as new, while the suite's
    own helpers, started before the first snapshot, are in both and cancel out."""
    out = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            started = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[19])
            uid = entry.stat().st_uid
        except (OSError, ValueError, IndexError):
            continue
        if not cmdline:  # kernel threads come and go on their own
            continue
        text = cmdline.replace(b"\0", b" ").decode(errors="replace")
        out[(int(entry.name), started)] = (uid, text)
    return out


def snapshot(watch: Tracker | None = None) -> HostState:
    """The host now; `watch` (default: the session's tracker) attributes what differs."""
    watching = watch or tracker()  # started before anything it must see
    return HostState(
        network={name: _run(argv) for name, argv in NETWORK_COMMANDS.items()},
        sysctls=_sysctls(),
        files=_files(),
        processes=_processes(),
        modules=_modules(),
        tracker=watching,
    )


def _diff_maps(
    kind: str, a: dict, b: dict, limit: int = 10, keep: Callable[[Any], bool] | None = None
) -> list[str]:
    out = []
    for key in sorted(set(a) | set(b), key=str):
        if keep is not None and a.get(key) != b.get(key) and not keep(key):
            continue  # someone else's
        if key not in b:
            out.append(f"{kind} gone: {key} (was {str(a[key])[:200]})")
        elif key not in a:
            out.append(f"{kind} new: {key} = {str(b[key])[:200]}")
        elif a[key] != b[key]:
            out.append(f"{kind} changed: {key}: {str(a[key])[:200]} -> {str(b[key])[:200]}")
        if len(out) >= limit:
            out.append(f"... ({kind}: more differences)")
            break
    return out


def diff(before: HostState, after: HostState) -> list[str]:
    """Every difference between two snapshots, one line each (empty: the host is unchanged);
    of processes and files, those of the test run's own processes (see the docstring)."""
    watch = before.tracker
    ours_file: Callable[[Any], bool] | None = None
    ours_process: Callable[[Any], bool] | None = None
    if watch is not None and not watch.lost:
        ours_file = watch.paths().__contains__
        ours_process = watch.pid_of_ours
    return [
        *_diff_maps("network", before.network, after.network),
        *_diff_maps("sysctl", before.sysctls, after.sysctls),
        *_diff_maps("file", before.files, after.files, keep=ours_file),
        *_diff_maps("process", before.processes, after.processes, keep=ours_process),
        *_diff_maps("module", _lines(before.modules), _lines(after.modules)),
    ]


def _lines(text: str) -> dict[str, bool]:
    return dict.fromkeys(text.splitlines(), True)
