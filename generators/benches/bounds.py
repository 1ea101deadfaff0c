"""Kernel memory an agent can make one lab hold, before and after the bounds by effect.

The kernel memory here is what /proc/meminfo counts as the kernel's own and never gives
back under pressure: unreclaimable slab, vmalloc, per-CPU, page tables, kernel stacks.
Nothing narrower exists for it: xt_string's text-search automaton is allocated with
GFP_KERNEL, charged to no memory cgroup, and the rest of what a network namespace holds
is kernel-wide too. So every figure is a difference of that total, before and after,
on a machine other work shares: each is taken several times, fill and release, and the
median is given with its spread.

  - weights: kernel bytes per object of each bounded kind, for its heaviest form the
    policy allows (a rule with six 256-character comments; one with six Boyer-Moore
    string matches, the issue's rule; a next hop of a multipath route; a permanent and a
    proxy neighbour; an address; a policy rule; a qdisc), thousands of them in a scratch
    namespace, so the signal stands above the noise;
  - per lab, computed: budget.LIMITS x the weights, per device, times the lab's agent
    machines; and what the bounds before (counted before a command only, no string-match
    bound, proxies and next hops not counted) let one command per device add on top;
  - per lab, measured: a 7-machine Mininet lab, each machine sent the issue's six-string
    comma list at most (as before: straight in; now: through the command sandbox, which
    refuses it) and then filled to every bound the sandbox keeps.

    python -m pipeline.bench --only bounds
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from emulators.base import Device, Interface, Lab
from emulators.mininet.emulator import MininetEmulator
from emulators.netcmd import budget, inventory
from emulators.netcmd.policy import check
from emulators.netcmd.sandbox import CommandSandbox, Status
from emulators.scratchns import scratch_netns

KEYS = ("SUnreclaim", "VmallocUsed", "Percpu", "PageTables", "KernelStack")
REPS = 5
SETTLE_S = 1.0  # RCU callbacks and the namespace cleanup work free memory a moment later
MACHINES = 7
Batch = tuple[Sequence[str], str]  # (argv run in the namespace, its standard input)


def kernel_kb() -> int:
    """The kernel's unreclaimable memory now, in KiB (see the module docstring)."""
    values = {}
    with open("/proc/meminfo") as lines:
        for line in lines:
            name, _, rest = line.partition(":")
            values[name] = int(rest.split()[0])
    return sum(values[k] for k in KEYS)


def _in(netns: str, batches: Sequence[Batch]) -> None:
    for argv, stdin in batches:
        done = subprocess.run(
            ["nsenter", f"--net={netns}", *argv],
            input=stdin,
            text=True,
            capture_output=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()[-300:]}")


def _median(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1)}  # fmt: skip


def weigh(setup: Sequence[Batch], fill: Sequence[Batch], objects: int) -> dict[str, float]:
    """Kernel bytes per object: `fill` (making `objects` objects) run in a scratch network
    namespace after `setup`; the memory it took and the memory its namespace gave back
    when it went, REPS times each."""
    per_object = []
    for _ in range(REPS):
        with scratch_netns() as netns:
            _in(netns, [(["ip", "link", "set", "lo", "up"], ""), *setup])
            time.sleep(SETTLE_S)
            start = kernel_kb()
            _in(netns, fill)
            time.sleep(SETTLE_S)
            full = kernel_kb()
        time.sleep(3 * SETTLE_S)
        gone = kernel_kb()
        per_object += [(full - start) * 1024 / objects, (full - gone) * 1024 / objects]
    return _median(per_object)


def _veth(n: int = 1) -> Batch:
    lines = [f"link add name b{i} type veth peer name c{i}" for i in range(n)]
    lines += [f"link set b{i} up" for i in range(n)] + [f"link set c{i} up" for i in range(n)]
    return ["ip", "-batch", "-"], "\n".join(lines) + "\n"


def _rules(n: int, matches: str) -> Batch:
    body = [f"-A INPUT -s 10.{i // 62500}.{i // 250 % 250}.{i % 250} {matches} -j DROP"
            for i in range(n)]  # fmt: skip
    return ["iptables-restore"], "\n".join(["*filter", *body, "COMMIT"]) + "\n"


COMMENTS6 = " ".join(f"-m comment --comment {c * 256}" for c in "abcdef")
STRINGS6 = " ".join(f"-m string --algo bm --string x{i}" for i in range(6))
MIXED6 = ("-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 -m conntrack "
          "--ctstate NEW -m iprange --src-range 1.1.1.1-1.1.1.9 -m mac --mac-source "
          "00:11:22:33:44:55 -m length --length 100:200")  # fmt: skip


def _multipath(routes: int, hops: int) -> Batch:
    """`routes` routes of `hops` next hops each, no two with the same set (a shared set
    would be one fib_info)."""
    lines = []
    for r in range(routes):
        n = [r * hops + h for h in range(hops)]
        gateways = [f"10.{g // 62500 % 250}.{g // 250 % 250}.{g % 250 + 1}" for g in n]
        nexthops = " ".join(f"nexthop via {g} dev b0" for g in gateways)
        lines.append(f"route add 11.{r // 62500}.{r // 250 % 250}.{r % 250}/32 {nexthops}")
    return ["ip", "-batch", "-"], "\n".join(lines) + "\n"


def weights() -> dict[str, dict[str, float]]:
    """Kernel bytes per object, per bounded kind in its heaviest allowed form."""
    on_link = (["ip", "addr", "add", "10.255.255.254/8", "dev", "b0"], "")
    # Small objects need many of them to stand above the machine's own noise (MBs).
    big = 100_000
    neigh = [f"neigh add 10.1.{i // 250 % 250}.{i % 250} lladdr 00:11:22:33:44:55 dev b0"
             for i in range(big // 2)]  # fmt: skip
    neigh += [f"neigh add 10.2.{i // 250 % 250}.{i % 250} lladdr 00:11:22:33:44:55 dev b0"
              for i in range(big // 2)]  # fmt: skip
    # (the kernel keeps proxy entries in 16 hash buckets, each address of a device in one
    # list and policy rules in one list: adding them slows with their number, so fewer)
    proxy = [f"neigh add proxy 10.3.{i // 250 % 250}.{i % 250} dev b0" for i in range(30000)]
    addrs = [f"addr add 10.5.{i // 250 % 250}.{i % 250 + 1}/32 dev b0" for i in range(10000)]
    rules = [f"rule add pref {i + 1} from 10.6.{i // 250 % 250}.{i % 250} lookup {i % 200 + 1}"
             for i in range(10000)]  # fmt: skip
    route6 = [f"route add unreachable 2001:{0xDB8 + i // 65536:x}:{i % 65536:x}::/48"
              for i in range(big)]  # fmt: skip
    qdiscs = [f"qdisc add dev {d}{i} {k}" for i in range(1000) for d in "bc"
              for k in ("root pfifo limit 10240", "clsact")]  # fmt: skip

    def ip(lines: list[str], *options: str) -> Batch:
        return ["ip", *options, "-batch", "-"], "\n".join(lines) + "\n"

    cases: dict[str, tuple[list[Batch], list[Batch], int]] = {
        "rule_six_comments": ([], [_rules(20000, COMMENTS6)], 20000),
        "rule_six_mixed_matches": ([], [_rules(20000, MIXED6)], 20000),
        "rule_six_bm_strings": ([], [_rules(4000, STRINGS6)], 4000),
        "route_next_hop": ([_veth(), on_link], [_multipath(big // 28, 28)], big // 28 * 28),
        # (past ~20,000 routes with a fib_info each on one device, adding one slows down
        # by orders of magnitude: 40,000 take minutes)
        "route_ipv4": ([_veth(), on_link], [_multipath(10000, 1)], 10000),
        "route_ipv6": ([], [ip(route6, "-6")], big),
        "neighbour_permanent": ([_veth()], [ip(neigh)], big),
        "neighbour_proxy": ([_veth()], [ip(proxy)], 30000),
        "address": ([_veth()], [ip(addrs)], 10000),
        "policy_rule": ([], [ip(rules)], 10000),
        "qdisc": ([_veth(1000)], [(["tc", "-batch", "-"], "\n".join(qdiscs) + "\n")], 4000),
    }
    return {name: weigh(setup, fill, n) for name, (setup, fill, n) in cases.items()}


def six_string_command(limit: int = 1000) -> tuple[str, int]:
    """The issue's command grown to the reply's character limit: as many -s and -d
    addresses as fit beside six string matches; (command, rules iptables makes of it)."""
    sources, targets = ["1.0.0.1"], ["2.0.0.1"]
    while True:
        grow = sources if len(sources) <= len(targets) else targets
        first = "1" if grow is sources else "2"
        grow.append(f"{first}.0.{len(grow) // 250}.{len(grow) % 250 + 1}")
        command = (f"iptables -I FORWARD -s {','.join(sources)} -d {','.join(targets)} "
                   f"{STRINGS6} -j DROP")  # fmt: skip
        if len(command) > limit:
            grow.pop()
            command = (f"iptables -I FORWARD -s {','.join(sources)} -d {','.join(targets)} "
                       f"{STRINGS6} -j DROP")  # fmt: skip
            return command, len(sources) * len(targets)


def _longest_multipath(limit: int = 1000) -> int:
    """How many next hops one `ip route add` of `limit` characters holds."""
    head, hop = "ip route add 10.99.0.0/24", " nexthop via 10.0.0.123"
    return (limit - len(head)) // len(hop)


def computed(w: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Kernel MiB one device and one lab of MACHINES agent machines can hold: the bounds
    now (budget.LIMITS x the heaviest object of each kind; every string match counted as
    a sixth of the six-string rule) and before (one command past the bound per device:
    the longest six-string comma list; routes counted, not next hops; proxies not
    counted, so one per command without bound: left out here)."""

    m = {k: v["median"] for k, v in w.items()}
    limits = budget.LIMITS
    rule = max(m["rule_six_comments"], m["rule_six_mixed_matches"])
    route = max(m["route_next_hop"], m["route_ipv4"], m["route_ipv6"])
    rest = (limits[budget.TC] * m["qdisc"] + limits[budget.ADDRESSES] * m["address"]
            + limits[budget.IP_RULES] * m["policy_rule"])  # fmt: skip
    now = (limits[budget.RULES] * rule + limits[budget.STRINGS] * m["rule_six_bm_strings"] / 6
           + limits[budget.ROUTES] * route
           + limits[budget.NEIGHBOURS] * max(m["neighbour_permanent"], m["neighbour_proxy"])
           + rest)  # fmt: skip
    _, expansion = six_string_command()
    before = ((limits[budget.RULES] - 1 + expansion) * m["rule_six_bm_strings"]
              + limits[budget.ROUTES] * _longest_multipath() * m["route_next_hop"]
              + limits[budget.NEIGHBOURS] * m["neighbour_permanent"] + rest)  # fmt: skip
    mib = 1 << 20
    return {
        "device_now_mib": round(now / mib, 2),
        "lab_now_mib": round(MACHINES * now / mib, 1),
        "device_before_mib": round(before / mib, 1),
        "lab_before_mib": round(MACHINES * before / mib, 1),
        "before_one_command_rules": expansion,
        "before_route_next_hops": _longest_multipath(),
    }


def bench_lab() -> Any:
    return Lab("bounds-bench", tuple(
        Device(f"m{i}", (Interface(f"m{i}-eth0", "s1", (f"10.0.0.{i + 1}/24",)),))
        for i in range(MACHINES)
    ))  # fmt: skip


def fill_to_bounds(netns: str, intf: str, own: int) -> dict[str, int]:
    """Every bound of the device at `netns` filled with the heaviest objects the command
    sandbox lets through; what it holds then (budget.py's counts)."""

    def room(kind: str) -> int:
        return budget.LIMITS[kind] - inventory.take(netns).counts()[kind]

    # 16 string matches (6 + 6 + 4), then the heaviest rules without one up to the bound
    _in(netns, [(["iptables", "-A", "INPUT", *STRINGS6.split(), "-j", "DROP"], "")])
    strings = [f"-A INPUT {STRINGS6} -j DROP",
               "-A INPUT " + " ".join(STRINGS6.split()[:24]) + " -j DROP"]  # fmt: skip
    restore = ["iptables-restore", "--noflush"]
    _in(netns, [(restore, "\n".join(["*filter", *strings, "COMMIT"]) + "\n")])
    _in(netns, [(restore, _rules(room(budget.RULES), COMMENTS6)[1])])
    addrs = [f"addr add 10.7.{i // 250}.{i % 250 + 1}/32 dev {intf}"
             for i in range(room(budget.ADDRESSES))]  # fmt: skip
    rules = [f"rule add pref {1000 + i} from 10.6.0.{i % 250} lookup {i + 1}"
             for i in range(room(budget.IP_RULES))]  # fmt: skip
    half = room(budget.NEIGHBOURS) // 2
    neigh = [f"neigh add 10.9.{i // 250}.{i % 250 + 1} lladdr 00:11:22:33:44:55 dev {intf}"
             for i in range(half)]  # fmt: skip
    neigh += [f"neigh add proxy 10.8.{i // 250}.{i % 250 + 1} dev {intf}" for i in range(half)]
    _in(netns, [(["ip", "-batch", "-"], "\n".join(addrs + rules + neigh) + "\n")])
    gateways = [f"10.0.0.{g}" for g in range(20, 250) if g != own]
    hops, routes = 28, []
    for r in range(room(budget.ROUTES) // hops):
        chosen = gateways[r : r + hops]
        routes.append(f"route add 11.0.{r}.0/24 " + " ".join(f"nexthop via {g}" for g in chosen))
    _in(netns, [(["ip", "-batch", "-"], "\n".join(routes) + "\n")])
    _in(netns, [(["tc", "qdisc", "replace", "dev", intf, "root", "pfifo", "limit", "10240"], ""),
                (["tc", "qdisc", "add", "dev", intf, "clsact"], "")])  # fmt: skip
    return dict(inventory.take(netns).counts())


def lab_figures() -> dict[str, Any]:
    """The 7-machine lab, REPS times each way: kernel MiB it held after each machine was
    sent the issue's longest six-string comma list straight in (before), and after the
    same through the command sandbox, then filled to every bound (now)."""

    command, _ = six_string_command()
    argv = list(check(command).argv)
    lab = bench_lab()
    machines = [d.name for d in lab.devices]
    deltas: dict[str, list[float]] = {"before": [], "now": []}
    held: dict[str, int] = {}
    for _ in range(REPS):
        for mode in ("before", "now"):
            with MininetEmulator() as emu:
                emu.build(lab)
                time.sleep(SETTLE_S)
                start = kernel_kb()
                sandbox = CommandSandbox(emu, machines, timeout_s=60)
                for i, machine in enumerate(machines):
                    if mode == "before":
                        emu.run(machine, argv, timeout_s=120, output_bytes=4096)
                        continue
                    refused = sandbox.run(machine, command)
                    if refused.status is not Status.LIMIT:
                        raise RuntimeError(f"the sandbox let through: {refused.output[:200]}")
                    held = fill_to_bounds(emu.netns_path(machine), f"{machine}-eth0", i + 1)
                    over = {k: n for k, n in held.items() if n > budget.LIMITS[k]}
                    if over:
                        raise RuntimeError(f"the fill went past the bounds: {over}")
                time.sleep(SETTLE_S)
                full = kernel_kb()
            time.sleep(3 * SETTLE_S)
            gone = kernel_kb()
            deltas[mode] += [(full - start) / 1024, (full - gone) / 1024]
    return {
        "lab_measured_before_mib": _median(deltas["before"]),
        "lab_measured_now_mib": _median(deltas["now"]),
        "device_held_now": held,
    }


def run_all() -> dict[str, Any]:
    w = weights()
    figures: dict[str, Any] = {f"bytes_per_{k}": v for k, v in w.items()}
    figures.update(computed(w))
    figures.update(lab_figures())
    figures["machines"] = MACHINES
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(run_all(), indent=2))
