"""The configuration tasks of a network, their order, and how each is checked.

Kinds (label `<kind>:<n>`, n counting that kind in the network's device order, so the
same label means the same role across queries — NetLLMBench's nine tasks are
host_ip:1-3, router_ip:1-2, gateway:1-3 and ping:1):

  host_ip    give a host its address on its interface
  router_ip  give a router interface its address
  route      add a static route on a router (two-router labs)
  gateway    set a host's default gateway
  ping       ping one host from another, three times, and get the replies

Every check reads the network, never the command's output: an address counts only on
the right interface of the right device, with global scope and no lifetime (a `scope
host` address serves only its own machine; one that expires is not a lasting
configuration); a gateway only as that host's default route out of its own interface
(not `via … dev lo onlink`); a route only in that router's main table, out of the port
that reaches its next hop. A ping counts when the step itself was a ping from the right
host to the right address whose replies all arrived (ping's own summary line, written by
the real ping on the real network) and, with end-to-end checks on, the environment's own
probe finds the target host answering at that address (generators/netllmbench/checks.py:
an alias of the target on the source's loopback answers ping, but is not the target).

Dependencies: a gateway needs its host's address, a route its router's transit address,
and the ping comes last. `order` draws a task order that respects them.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulators.base import Emulator
from generators.netllmbench.config import KINDS
from generators.netllmbench.lab import Network
from pipeline.api import EnvironmentFailure

__all__ = ["KINDS", "Task", "holds", "observe", "order", "pinged", "tasks_of"]
PING_COUNT = 3  # NetLLMBench pings three times
_PING_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


@dataclass(frozen=True)
class Task:
    label: str  # "<kind>:<n>"
    kind: str
    device: str
    interface: str = ""  # host_ip, router_ip
    address: str = ""  # host_ip, router_ip: "a.b.c.d/p"; gateway, route: the next hop;
    #                    ping: the target's address
    subnet: str = ""  # route: the destination
    target: str = ""  # ping: the target host; gateway, route: the router behind the hop
    needs: tuple[str, ...] = ()  # labels of the tasks that must be done first

    def __post_init__(self) -> None:
        if self.kind not in KINDS or not self.label.startswith(f"{self.kind}:"):
            raise ValueError(f"task {self.label!r} of kind {self.kind!r}: kinds are {KINDS}")

    def text(self) -> str:
        """The task as the agent reads it."""
        if self.kind in ("host_ip", "router_ip"):
            what = "host" if self.kind == "host_ip" else "router"
            return (
                f"Give {what} {self.device} the IPv4 address {self.address} on its interface "
                f"{self.interface}."
            )
        if self.kind == "gateway":
            return (
                f"Set the default gateway of {self.device} to {self.address} ({self.target}'s "
                "address on its subnet)."
            )
        if self.kind == "route":
            return (
                f"On router {self.device}, add a static route to {self.subnet} via "
                f"{self.address} ({self.target})."
            )
        return (
            f"From {self.device}, ping {self.target} ({self.address}) {PING_COUNT} times; "
            "every reply must arrive."
        )

    def done_text(self) -> str:
        """The task as done, for a prompt listing what is configured already."""
        if self.kind in ("host_ip", "router_ip"):
            return f"{self.device} has {self.address} on {self.interface}"
        if self.kind == "gateway":
            return f"{self.device}'s default gateway is {self.address} ({self.target})"
        if self.kind == "route":
            return f"{self.device} routes {self.subnet} via {self.address} ({self.target})"
        return f"{self.device} pinged {self.target} ({self.address})"

    def command(self) -> str:
        """What the oracle sends (it must pass the command sandbox)."""
        if self.kind in ("host_ip", "router_ip"):
            return f"ip addr add {self.address} dev {self.interface}"
        if self.kind == "gateway":
            return f"ip route add default via {self.address}"
        if self.kind == "route":
            return f"ip route add {self.subnet} via {self.address}"
        return f"ping -c {PING_COUNT} -W 1 {self.address}"

    def assist(self) -> tuple[str, ...] | None:
        """How the environment completes the task for an agent that failed it (idempotent,
        so it works whatever the agent left), or None for a ping (nothing to complete)."""
        if self.kind in ("host_ip", "router_ip"):
            return ("ip", "addr", "replace", self.address, "dev", self.interface)
        if self.kind == "gateway":
            return ("ip", "route", "replace", "default", "via", self.address)
        if self.kind == "route":
            return ("ip", "route", "replace", self.subnet, "via", self.address)
        return None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", ())} | {
            "needs": list(self.needs)
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        return cls(**{**data, "needs": tuple(data.get("needs", ()))})


def tasks_of(net: Network, ping: tuple[str, str]) -> list[Task]:
    """Every task of `net` in canonical order (host addresses, router addresses, routes,
    gateways, the ping from ping[0] to ping[1])."""
    tasks: list[Task] = []
    by_port: dict[tuple[str, str], str] = {}
    for n, host in enumerate(net.hosts, 1):
        port = net.port(host)
        tasks.append(Task(f"host_ip:{n}", "host_ip", host, port.interface, port.address))
        by_port[host, port.interface] = tasks[-1].label
    router_ports = [p for p in net.ports if p.device in net.routers]
    for n, port in enumerate(router_ports, 1):
        tasks.append(Task(f"router_ip:{n}", "router_ip", port.device, port.interface, port.address))
        by_port[port.device, port.interface] = tasks[-1].label
    for n, (router, subnet, via) in enumerate(net.routes, 1):
        own = next(p for p in net.ports_of(router) if ipaddress.ip_address(via) in _net(p.address))
        peer = next(p.device for p in router_ports if p.ip == via)
        needs = (by_port[router, own.interface],)
        tasks.append(Task(f"route:{n}", "route", router, "", via, subnet, peer, needs))
    gateways = dict(net.gateways)
    for n, host in enumerate(net.hosts, 1):
        router = next(p.device for p in router_ports if p.ip == gateways[host])
        needs = (by_port[host, net.port(host).interface],)
        tasks.append(Task(f"gateway:{n}", "gateway", host, "", gateways[host], "", router, needs))
    source, target = ping
    earlier = tuple(t.label for t in tasks)
    tasks.append(Task("ping:1", "ping", source, "", net.port(target).ip, "", target, earlier))
    return tasks


def _net(address: str) -> ipaddress.IPv4Network:
    return ipaddress.ip_interface(address).network


def order(tasks: Sequence[Task], rng: random.Random | None, done: Iterable[str] = ()) -> list[Task]:
    """The tasks in an order that respects `needs` (those in `done` are met already): as
    given without `rng`, else a random one (each step picks among the tasks whose needs
    are met)."""
    if rng is None:
        return list(tasks)
    left, done, out = list(tasks), set(done), []
    while left:
        ready = [t for t in left if set(t.needs) <= done]
        task = rng.choice(ready)
        left.remove(task)
        done.add(task.label)
        out.append(task)
    return out


# -- observing the network ---------------------------------------------------------------
FOREVER = 0xFFFFFFFF


@dataclass
class DeviceState:
    # (interface, "a.b.c.d/p") -> the address's record from `ip -j addr`
    addresses: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # main-table routes: (destination, gateway, device), unicast only
    routes: set[tuple[str, str, str]] = field(default_factory=set)


def observe(emu: Emulator, devices: Iterable[str]) -> dict[str, DeviceState]:
    """Addresses and main-table routes of `devices`, read with `ip -j`."""
    states = {}
    for device in devices:
        state = DeviceState()
        for iface in _json(emu, device, ("ip", "-j", "-4", "addr", "show")):
            for info in iface.get("addr_info", ()):
                key = (iface["ifname"], f"{info['local']}/{info['prefixlen']}")
                state.addresses[key] = info
        for route in _json(emu, device, ("ip", "-j", "-4", "route", "show", "table", "main")):
            if route.get("type", "unicast") == "unicast":
                state.routes.add((route["dst"], route.get("gateway", ""), route.get("dev", "")))
        states[device] = state
    return states


def _json(emu: Emulator, device: str, argv: tuple[str, ...]) -> list[dict[str, Any]]:
    result = emu.run(device, argv, timeout_s=5.0, output_bytes=1 << 20)
    try:
        if result.exit_code != 0:
            raise ValueError(f"exit {result.exit_code}")
        value = json.loads(result.output or "[]")
    except ValueError as err:
        raise EnvironmentFailure(
            f"reading {device} with `{shlex.join(argv)}` failed: {err}: {result.output[:200]}"
        ) from err
    return [v for v in value if isinstance(v, dict)]


def holds(task: Task, states: dict[str, DeviceState], net: Network) -> bool:
    """Whether the network state completes a configuration task (not a ping); see the
    module docstring."""
    state = states[task.device]
    if task.kind in ("host_ip", "router_ip"):
        info = state.addresses.get((task.interface, task.address))
        return (
            info is not None
            and info.get("scope", "global") == "global"
            and info.get("valid_life_time", FOREVER) == FOREVER
        )
    if task.kind == "gateway":
        return ("default", task.address, net.port(task.device).interface) in state.routes
    if task.kind == "route":
        via = ipaddress.ip_address(task.address)
        own = [p for p in net.ports_of(task.device) if via in _net(p.address)]
        return any((task.subnet, task.address, p.interface) in state.routes for p in own)
    raise ValueError(f"{task.label} is not a state task")


def pinged(
    task: Task, device: str, argv: Sequence[str], exit_code: int | None, output: str
) -> bool:
    """Whether a command was the task's ping and every one of at least PING_COUNT
    replies arrived."""
    if device != task.device or not argv or Path(argv[0]).name != "ping":
        return False
    if task.address not in argv[1:] or exit_code != 0:
        return False
    summary = _PING_SUMMARY.search(output)
    if summary is None:
        return False
    sent, received = int(summary.group(1)), int(summary.group(2))
    return sent >= PING_COUNT and received == sent
