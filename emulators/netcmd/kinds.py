"""Which kernel modules a lab command may make the kernel load: the named kinds it may use.

The lab jail (confine.py) is uid 0 of the initial user namespace holding CAP_NET_ADMIN, and
the kernel loads a module on request from such a process (kernel/kmod.c, run as the host's
root by the usermode helper: no namespace or cgroup of the jail applies). The requests an
allowed tool can make, each by a name taken from the command:

  - tc:       a qdisc kind (qdisc_create: request_module "sch_"/"net-sch-" KIND), a filter
              kind (tcf_proto_lookup_ops: "cls_"/"net-cls-"), an action kind
              (tc_lookup_action_n: "act_"/"net-act-"), an ematch ("ematch-kind-N");
  - ip link:  `add ... type KIND` (rtnl_newlink: "rtnl-link-KIND"), route `encap`
              (lwtunnel: "rtnl-lwt-KIND");
  - iptables: every match and target (xt_request_find_match / nft_compat: "xt_NAME",
              "ipt_NAME"), the nf_tables chain types and expressions its rules compile
              to ("nft-chain-2-nat", "nft-expr-..."), the string match's algorithm
              (textsearch_prepare: "ts_ALGO");
  - sysctl:   net.ipv4.tcp_congestion_control (tcp_ca_find_autoload: "tcp_NAME", because
              the jail is capable(CAP_NET_ADMIN));
  - any tool: an interface name that does not exist (dev_load on SIOCGIF* ioctls, which
              `ip` and `tc` make through if_nametoindex and ifconfig makes directly:
              "netdev-NAME", again because the jail is capable(CAP_NET_ADMIN)).

Nothing in the jail can stop those requests, so the argument checks name what may be asked
for: the allow-lists below are what the routing and netllmbench apps need (a tbf qdisc,
filter rules, the default congestion controls) plus the common tools an operator reaches
for when repairing them. `ip link add` is refused outright (no link kind is allowed), and
route `encap` with it. An interface name that is a module's fallback device (a
`netdev-NAME` alias in the running kernel's modules.alias, e.g. gre0, tunl0, sit0) is
refused wherever it appears.

`preload()` then makes the kernel load, once per boot and process, what the allowed kinds
need, by using each of them in a throwaway network namespace: from then on nothing an
agent sends makes the kernel load a module. On a kernel without module support
(/proc/modules absent) there is nothing to load and it does nothing.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from pathlib import Path

from pipeline.errors import EnvironmentFailure

# tc (see tc.py for each kind's parameters and bounds).
QDISC_KINDS = ("pfifo_fast", "pfifo", "bfifo", "tbf", "htb", "sfq", "prio", "fq_codel", "ingress",
               "clsact")  # fmt: skip
CLASS_KINDS = ("htb",)
FILTER_KINDS = ("u32", "fw", "matchall")
# Actions by their kind; gact is also what tc reads the bare verdicts as (`action drop`).
ACTION_KINDS = ("gact",)
GACT_VERDICTS = ("drop", "shot", "pass", "ok", "continue", "reclassify", "pipe")
# `ip link add` is refused, so no link kind is ever asked for.
LINK_KINDS: tuple[str, ...] = ()
# net.ipv4.tcp_congestion_control; also refused unless the kernel has it registered now.
CONGESTION_CONTROLS = ("reno", "cubic")
# iptables -m string --algo.
STRING_ALGOS = ("bm", "kmp")

PROC_MODULES = Path("/proc/modules")
CONGESTION_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
_NETDEV_ALIAS = re.compile(r"^alias netdev-(\S+) ", re.MULTILINE)
# Fallback devices of mainline modules (MODULE_ALIAS_NETDEV), for a kernel whose
# modules.alias cannot be read: refusing them costs nothing, no lab device has such a name.
KNOWN_NETDEV_ALIASES = frozenset({
    "gre0", "gretap0", "erspan0", "tunl0", "sit0", "ip6tnl0", "ip6gre0", "ip_vti0",
    "ip6_vti0", "xfrm0",
})  # fmt: skip


def modules_supported() -> bool:
    """Whether this kernel loads modules at all (CONFIG_MODULES)."""
    return PROC_MODULES.exists()


def loaded_modules() -> frozenset[str]:
    try:
        text = PROC_MODULES.read_text()
    except OSError:
        return frozenset()
    return frozenset(line.split(" ", 1)[0] for line in text.splitlines() if line)


@functools.cache
def netdev_aliases() -> frozenset[str]:
    """Interface names the kernel would load a module for (`alias netdev-NAME ...`)."""
    path = Path("/lib/modules") / platform.release() / "modules.alias"
    try:
        found = frozenset(_NETDEV_ALIAS.findall(path.read_text()))
    except OSError:
        found = frozenset()
    return KNOWN_NETDEV_ALIASES | found


def netdev_refusal(word: str) -> str | None:
    """Why `word` may not appear in a command: it names a module's fallback device (also
    as `NAME:alias` or `NAME@peer`, which dev_ioctl and iproute2 reduce to NAME)."""
    name = re.split(r"[:@]", word, maxsplit=1)[0]
    if name in netdev_aliases():
        return (
            f"{word!r} names a kernel module's device (netdev-{name}): asking for it would "
            "make the kernel load that module; this lab has no such device"
        )
    return None


def congestion_refusal(value: str) -> str | None:
    """None when net.ipv4.tcp_congestion_control may be set to `value`; else why not."""
    name = value.strip()
    if name not in CONGESTION_CONTROLS:
        allowed = " or ".join(CONGESTION_CONTROLS)
        return f"net.ipv4.tcp_congestion_control takes {allowed} here, not {name!r}"
    try:
        available = CONGESTION_AVAILABLE.read_text().split()
    except OSError:
        available = []
    if name not in available:
        return f"the congestion control {name!r} is not available on this kernel"
    return None


# Each allowed kind used once, in a throwaway namespace (lo and a dummy-free setup: only
# what a fresh network namespace has). Failures are expected where a kind is built out.
_WARM_TC = [
    *(f"tc qdisc replace dev lo root {k}" for k in ("pfifo_fast", "pfifo", "bfifo", "sfq", "prio",
                                                    "fq_codel")),
    "tc qdisc replace dev lo root tbf rate 1mbit burst 32k latency 50ms",
    "tc qdisc add dev lo ingress",
    "tc qdisc del dev lo ingress",
    "tc qdisc add dev lo clsact",
    "tc qdisc replace dev lo root handle 1: htb default 10",
    "tc class add dev lo parent 1: classid 1:10 htb rate 1mbit",
    "tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.0/8 action drop",
    "tc filter add dev lo parent 1: protocol ip prio 2 handle 1 fw classid 1:10",
    "tc filter add dev lo parent 1: prio 3 matchall classid 1:10",
]  # fmt: skip
_WARM_IPTABLES = [
    "iptables -t nat -A POSTROUTING -o lo -j MASQUERADE",
    "iptables -t nat -A PREROUTING -p tcp --dport 1 -j DNAT --to-destination 127.0.0.1",
    "iptables -t nat -A OUTPUT -p tcp --dport 1 -j REDIRECT --to-ports 2",
    "iptables -t nat -A POSTROUTING -s 10.0.0.0/8 -j SNAT --to-source 127.0.0.1",
    "iptables -t raw -A PREROUTING -j NOTRACK",
    "iptables -t mangle -A PREROUTING -j MARK --set-mark 1",
    "iptables -t mangle -A PREROUTING -j CONNMARK --save-mark",
    "iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu",
    "iptables -t mangle -A PREROUTING -j DSCP --set-dscp 1",
    "iptables -t mangle -A PREROUTING -j TOS --set-tos 1",
    "iptables -t mangle -A PREROUTING -j TTL --ttl-set 64",
    "iptables -t mangle -A POSTROUTING -j CLASSIFY --set-class 1:1",
    "iptables -A INPUT -p tcp --syn -m conntrack --ctstate NEW -m state --state NEW -j REJECT",
    "iptables -A INPUT -p udp -m multiport --dports 1,2 -m iprange --src-range 1.1.1.1-1.1.1.2 "
    "-j DROP",
    "iptables -A INPUT -p icmp --icmp-type 8 -m mac --mac-source 00:00:00:00:00:01 -j ACCEPT",
    "iptables -A INPUT -m limit --limit 1/s -m hashlimit --hashlimit-above 1/s "
    "--hashlimit-name w -m comment --comment w -m length --length 1 -j ACCEPT",
    "iptables -A INPUT -m ttl --ttl-eq 1 -m mark --mark 1 -m addrtype --src-type LOCAL "
    "-m pkttype --pkt-type host -j RETURN",
    "iptables -A INPUT -m recent --name w --set -m connlimit --connlimit-above 1 -j DROP",
    "iptables -A INPUT -m string --algo bm --string w -m tos --tos 1 -m dscp --dscp 1 -j DROP",
    "iptables -A INPUT -m string --algo kmp --string w -j DROP",
]  # fmt: skip
_WARM_SYSCTL = [f"sysctl -qw net.ipv4.tcp_congestion_control={c}" for c in CONGESTION_CONTROLS]


def warm_script() -> str:
    """The shell script that uses every allowed kind once (run in a fresh namespace)."""
    lines = ["ip link set lo up", *_WARM_TC, *_WARM_IPTABLES, *_WARM_SYSCTL]
    return "\n".join(f"{line} >/dev/null 2>&1" for line in lines) + "\nexit 0\n"


_preloaded: set[str] = set()


def preload() -> frozenset[str]:
    """Make the kernel load the modules the allowed kinds need; what was loaded by it.

    Run once per boot and process, before any agent command (the command sandbox calls it
    when it is created). Needs root; does nothing on a kernel without module support."""
    if not modules_supported() or os.geteuid() != 0:
        return frozenset()  # nothing can load; or not root, when no lab can run either
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    if boot in _preloaded:
        return frozenset()
    before = loaded_modules()
    try:
        done = subprocess.run(
            ["unshare", "--net", "sh", "-s"],
            input=warm_script(),
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EnvironmentFailure(f"cannot preload the lab commands' kernel modules: {err}") from err
    if done.returncode != 0:
        raise EnvironmentFailure(
            "cannot preload the lab commands' kernel modules in a scratch network namespace "
            f"(unshare --net, exit {done.returncode}): {done.stderr.strip()[:300]}"
        )
    _preloaded.add(boot)
    return loaded_modules() - before


if __name__ == "__main__":  # scripts/setup.sh: python -m emulators.netcmd.kinds
    if os.geteuid() == 0:
        print(" ".join(sorted(preload())) or "nothing new to load")
