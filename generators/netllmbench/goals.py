"""Levels 4 and 5: the same tasks, asked as goals over an addressing plan by role.

Levels 1-3 hand the agent every name and number ("Give router r1 the address 10.0.1.1/24
on its interface eth1"). Levels 4 and 5 give what an operator's ticket gives: the
inventory (machine names and roles), the addressing plan (each LAN segment's subnet, each
transit link's /30, each host's address, the rules that place routers' addresses and
gateways), and one goal at a time ("Router r1 must have its planned address on its
interface to segment sw2"). Which interface is plugged where, what the router's address
on a segment is, which router is the next hop towards a segment, and what is configured
already, the agent finds out itself: every interface carries a description naming its
segment (lab.py: `described`), read with `ip link show`; addresses and routes with `ip
addr show` and `ip route show` (or the `show` diagnostic).

Scenarios (a query's `operation`): which kinds the agent plays, the others being
configured before it starts, as on a network in service. Each set is closed under the
tasks' needs (nothing configured beforehand needs a task the agent plays); every
scenario ends with the ping, and the network is then probed end to end, every host with
every other:

  build     everything, from a bare lab (greenfield)
  hosts     hosts' addresses and default gateways (the routers are in service)
  routers   routers' addresses and static routes (the hosts are configured)
  routes    static routes only (everything else is configured)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from emulators.base import backend_name
from generators.lab.reply import REPLY_FORMAT
from generators.netllmbench.lab import Network
from generators.netllmbench.prompt import TOOLS
from generators.netllmbench.tasks import PING_COUNT, Task

GOAL_LEVELS = (4, 5)


@dataclass(frozen=True)
class Scenario:
    name: str
    kinds: frozenset[str]  # the kinds played, ping included


def _scenario(name: str, *kinds: str) -> Scenario:
    return Scenario(name, frozenset((*kinds, "ping")))


SCENARIOS = (
    _scenario("build", "host_ip", "router_ip", "route", "gateway"),
    _scenario("hosts", "host_ip", "gateway"),
    _scenario("routers", "router_ip", "route"),
    _scenario("routes", "route"),
)


def scenarios(kinds: list[str] | None) -> list[Scenario]:
    """The scenarios whose kinds (the ping aside) are all in `kinds` (None: all)."""
    if kinds is None:
        return list(SCENARIOS)
    return [s for s in SCENARIOS if s.kinds - {"ping"} <= set(kinds)]


def _segment_of(net: Network, address: str) -> str:
    ip = ipaddress.ip_address(address.split("/")[0])
    return next(
        s for s in net.switches if ip in ipaddress.ip_interface(net.router_on(s).address).network
    )


def _port_switch(net: Network, task: Task) -> str:
    return next(p.switch for p in net.ports_of(task.device) if p.interface == task.interface)


def goal_text(task: Task, net: Network) -> str:
    """The task as a goal: no interface names, no addresses the plan does not give."""
    if task.kind == "host_ip":
        return (
            f"Host {task.device} must have its planned address on the interface that plugs "
            "it into its segment."
        )
    if task.kind == "router_ip":
        switch = _port_switch(net, task)
        what = "transit link" if net.is_transit(switch) else "segment"
        return (
            f"Router {task.device} must have its planned address on its interface to "
            f"{what} {switch}."
        )
    if task.kind == "gateway":
        return (
            f"Host {task.device} must reach the other segments: give it its default gateway "
            "as the plan says."
        )
    if task.kind == "route":
        segment = _segment_of(net, task.subnet)
        return (
            f"Router {task.device} must reach segment {segment}, which it is not plugged "
            "into: add the static route the plan implies."
        )
    ping = (
        f"From {task.device}, ping {task.target}'s planned address {PING_COUNT} times; every "
        "reply must arrive."
    )
    return f"Final check: {ping} After it, every host must reach every other host."


def describe_plan(net: Network) -> str:
    """The inventory and the addressing plan by role; no wiring, no interface names."""
    lans = [s for s in net.switches if not net.is_transit(s)]
    transits = [s for s in net.switches if net.is_transit(s)]
    first = all(
        ipaddress.ip_interface(net.router_on(s).address).ip
        == next(ipaddress.ip_interface(net.router_on(s).address).network.hosts())
        for s in lans
    )
    chain = " - ".join(net.routers)
    lines = [
        f"Routers: {', '.join(net.routers)} (chained in this order: {chain}). "
        f"Hosts: {', '.join(net.hosts)}.",
        "Addressing plan:",
        *(f"  LAN segment {s}: {net.subnet(s)}" for s in lans),
    ]
    for s in transits:
        a, b = (p.device for p in net.ports if p.switch == s)
        lines.append(f"  transit link {s} ({a} - {b}): {net.subnet(s)}")
    hosts = ", ".join(f"{h} {net.port(h).ip}" for h in net.hosts)
    lines += [
        f"  hosts: {hosts}",
        "Rules: every router takes the "
        + ("first" if first else "last")
        + " usable address of each LAN segment it is plugged into; on a transit link the "
        "router earlier in the chain takes the lower usable address. A host's default "
        "gateway is the router on its segment. A router reaches a segment it is not "
        "plugged into through the next router towards it, at that router's address on "
        "the transit link between them.",
    ]
    return "\n".join(lines)


def build_goal_prompt(
    net: Network, played: list[Task], prepared: list[Task], backend: str, attempts: int
) -> str:
    state = (
        "Part of the network is in service already (everything that is not among your "
        "tasks); find out what it holds and do not undo it."
        if prepared
        else "Nothing is configured yet: no interface has an address and no host has a "
        "default route."
    )
    count = len(played)
    return "\n".join(
        [
            f"You are operating a small IP network emulated with {backend_name(backend)}: "
            f"{len(net.routers)} routers and {len(net.hosts)} hosts on LAN segments and "
            "transit links (Linux bridges).",
            "",
            describe_plan(net),
            "",
            "Which machine is plugged into which segment and what its interfaces are "
            "called is for you to find out: every interface carries a description naming "
            "its segment or transit link, which `ip link show` prints on an `alias` line "
            "under the interface (brief listings such as `ip -br link` and `ip addr` do "
            "not show it). " + state,
            "",
            f"You get {count} task{'s' * (count > 1)}, one at a time, each a goal. You "
            f"have {attempts} attempts per task: each attempt is one command on one "
            "machine, reading commands included. After each command you see its output "
            "and whether the task is complete. The network is judged by what works: at "
            "the end every host must reach every other host (ICMP, TCP and UDP probed), "
            "and nothing that worked may break on the way. Make only permanent changes "
            "(no address lifetimes, no temporary entries).",
            f"{REPLY_FORMAT} The command runs on that machine only, as root, without a "
            f"shell: no pipes, redirections or command lists. Allowed tools: {TOOLS}. "
            "Switches are not machines.",
        ]
    )
