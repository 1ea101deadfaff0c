"""Which sysctl keys an agent may write: the ones the kernel keeps per network namespace.

The kernel decides, not a name pattern. A throwaway network namespace owned by a fresh user
namespace (`unshare -Urn`) is walked once: the keys its root may write there are exactly
those the kernel registers per network namespace and lets a namespace's own administrator
change (init-only globals such as net.core.rmem_max are absent from such a namespace;
limits shared by all namespaces, such as nf_conntrack_max, are read-only in it). Keys
under a device's folder (conf/<dev>/, neigh/<dev>/) stand for every device.

One kind of key passes that test and is still host-wide: a per-namespace entry whose
handler changes global state. Those are listed in GLOBAL_STATE with the kernel's reason
and refused. The lab jail enforces the same list: /proc/sys is read-only in it, and only
the keys a checked `sysctl` command writes are bound writable for that one command.

Keys are named as procps' sysctl names them: `net.ipv4.ip_forward` or
`net/ipv4/conf/eth0.100/rp_filter` (if the first separator is `/`, dots stay dots).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from pathlib import Path

from pipeline.errors import EnvironmentFailure

PROC_SYS = Path("/proc/sys")
# Per-namespace entries that drive host-wide state.
GLOBAL_STATE = {
    # nf_hooks_lwtunnel_sysctl_handler enables the static key nf_hooks_lwtunnel_enabled for
    # the whole kernel, and refuses to clear it once set (EBUSY): irreversible until reboot.
    "net/netfilter/nf_hooks_lwtunnel": "it switches a kernel-wide setting that cannot be undone",
}
_DEVICE_DIRS = re.compile(r"^(net/ipv[46]/(?:conf|neigh))/([^/]+)/")
_PROBE = (
    "import os\n"
    "for root, _, names in os.walk('/proc/sys/net'):\n"
    "    for n in names:\n"
    "        p = os.path.join(root, n)\n"
    "        if os.access(p, os.W_OK):\n"
    "            print(p[len('/proc/sys/'):])\n"
)


def generalise(path: str) -> str:
    """`net/ipv4/conf/eth0/forwarding` -> `net/ipv4/conf/*/forwarding` (all/default kept)."""
    m = _DEVICE_DIRS.match(path)
    if m and m.group(2) not in ("all", "default"):
        return f"{m.group(1)}/*/{path[m.end() :]}"
    return path


def _state_key() -> str:
    """What the probe's answer depends on: this boot and the modules loaded now."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    try:
        modules = sorted(line.split()[0] for line in Path("/proc/modules").read_text().splitlines())
    except OSError:
        modules = []
    return hashlib.sha256((boot + " ".join(modules)).encode()).hexdigest()


@functools.lru_cache(maxsize=4)
def _probe(state: str) -> frozenset[str]:
    del state  # the cache key
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
    try:
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--net", python, "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EnvironmentFailure(f"cannot probe the per-namespace sysctls: {err}") from err
    if done.returncode != 0:
        raise EnvironmentFailure(
            "cannot probe the per-namespace sysctls in a user namespace (unshare -Urn): "
            f"{done.stderr.strip()[:300]}"
        )
    return frozenset(generalise(line) for line in done.stdout.split())


def namespaced() -> frozenset[str]:
    """Generalised paths (under /proc/sys) of every key the kernel keeps per namespace."""
    return _probe(_state_key())


def key_path(key: str) -> str:
    """procps' reading of a key: the path under /proc/sys it names."""
    key = key.strip()
    first = re.search(r"[./]", key)
    if first is None or first.group() == "/":
        return key.strip("/")
    return key.translate(str.maketrans("./", "/."))


def refusal(key: str) -> str | None:
    """None when an agent may write `key`; else why not."""
    path = key_path(key)
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") for p in parts) or parts[0] != "net":
        return f"sysctl may only write net.* keys; {key!r} is not one"
    if path in GLOBAL_STATE:
        return f"{key} may not be written: {GLOBAL_STATE[path]}"
    if generalise(path) not in namespaced():
        return (
            f"{key} may not be written: the kernel does not leave it to a network "
            "namespace's own administrator (it is shared with the host, or does not exist)"
        )
    return None


def proc_path(key: str) -> str:
    return str(PROC_SYS / key_path(key))
