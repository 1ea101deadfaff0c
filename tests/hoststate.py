"""What a hostile suite must leave exactly as it found it: a snapshot of the host, and a diff.

A snapshot holds the root network namespace (links, addresses, routes of every table, rules,
permanent neighbours, qdiscs, the nftables/iptables rulesets, the named namespaces), every
readable key under /proc/sys/net and /proc/sys/kernel, the files under /tmp, /root and /etc
(path, type, size, mode, mtime), and the processes (pid, uid, command line). Take one
before an environment starts and one after it stopped; `diff` lists what differs:

    before = hoststate.snapshot()
    ... start a lab, play hostile replies, stop it ...
    assert hoststate.diff(before, hoststate.snapshot()) == []

Keys the kernel changes by itself, pytest's own temporary folders and processes of the
test run itself are left out (listed below, each with its reason). Anything else that
happens on the host meanwhile shows up too, as it would if an agent had done it: run the
suites that use this on a quiet machine (CI is one), not beside other jobs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SYSCTL_TOPS = ("/proc/sys/net", "/proc/sys/kernel")
# The kernel changes these by itself: a counter of the last pid handed out, a fresh uuid
# on every read, the entropy estimate, the conntrack entry count (expiring flows).
VOLATILE_KEYS = frozenset(
    {
        "/proc/sys/kernel/ns_last_pid",
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
    processes: dict[int, tuple[int, str]] = field(default_factory=dict)


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


def _own_tree() -> set[int]:
    """This process and everything it started (pytest's workers, `ps` itself)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return mine


def _processes() -> dict[int, tuple[int, str]]:
    out = {}
    mine = _own_tree()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            uid = entry.stat().st_uid
        except OSError:
            continue
        if not cmdline:  # kernel threads come and go on their own
            continue
        out[int(entry.name)] = (uid, cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return out


def snapshot() -> HostState:
    return HostState(
        network={name: _run(argv) for name, argv in NETWORK_COMMANDS.items()},
        sysctls=_sysctls(),
        files=_files(),
        processes=_processes(),
    )


def _diff_maps(kind: str, a: dict, b: dict, limit: int = 10) -> list[str]:
    out = []
    for key in sorted(set(a) | set(b), key=str):
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
    """Every difference between two snapshots, one line each (empty: the host is unchanged)."""
    return [
        *_diff_maps("network", before.network, after.network),
        *_diff_maps("sysctl", before.sysctls, after.sysctls),
        *_diff_maps("file", before.files, after.files),
        *_diff_maps("process", before.processes, after.processes),
    ]
