"""The labs the app validates and plays on, behind one small interface (`LiveLab`).

What the app needs of a running lab, and nothing more: its NetSpec and the agent's command
sandbox (`sandbox_for(read_only)`); the flows that must work and the devices to read;
`restore()` back to the healthy converged network; `apply(injection)`, a trusted change;
`settle(window_s)` until the routing state is quiet (BGP sessions left idle by a change
retried at once, as generators/routing/frr/lab.py explains); `shell(scripts)`, read-only
scripts in the devices' namespaces in one round; `show(commands)`, trusted vtysh `show`
lines on routers; `probe(flows)`. Today's implementation is `ColdLab`, over
generators/incidents/lab.py's IncidentLab (a NetLab with the catalogue's internet edge
and services): a restore stops the daemons, restores the kernel snapshot and starts them
again. Issue 29's warm pool (restore by configuration diff, convergence read from
sockets) slots in behind the same methods.

`LabPool` keeps up to `max_live` labs by name (least recently used stopped first); a lab
whose use raised anything is closed, never reused.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Protocol, Self

from emulators.netcmd.sandbox import CommandSandbox
from emulators.probe import Flow
from generators.incidents.edge import INET
from generators.incidents.faults.kinds import Injection
from generators.incidents.lab import IncidentLab
from generators.netlab.live import host_flows, json_documents
from generators.netlab.spec import NetSpec
from pipeline.api import EnvironmentFailure

log = logging.getLogger(__name__)
POLL_S = 0.3
SETTLE_MAX_S = 40.0
MIN_QUIET_SAMPLES = 3
TRANSITIONAL = ("Init", "ExStart", "Exchange", "Loading", "2-Way", "Connect", "OpenSent",
                "OpenConfirm")  # fmt: skip
FLUSH_FRR = "ip -4 route flush proto ospf; ip -4 route flush proto bgp; ip nexthop flush"


class InjectionFailed(Exception):
    """A trusted injection did not apply: the draw's failing (the lab cannot hold it), not
    the environment's, so validation rejects the draw."""


class LiveLab(Protocol):
    spec: NetSpec
    sandbox: CommandSandbox

    def restore(self) -> None: ...

    def apply(self, injection: Injection) -> None: ...

    def settle(self, window_s: float) -> None: ...

    def shell(self, scripts: Mapping[str, str]) -> dict[str, tuple[int, str]]: ...

    def show(self, commands: Mapping[str, Sequence[str]]) -> dict[str, str]: ...

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]: ...

    def flows(self) -> list[Flow]: ...  # what must work: every host pair, and more

    def devices(self) -> tuple[str, ...]: ...  # every device read (its routes, filters)

    def sandbox_for(self, read_only: bool) -> CommandSandbox: ...


class ColdLab(IncidentLab):
    """The catalogue's lab (generators/incidents/lab.py: a NetLab with its internet edge,
    DNS and VRRP) with the app's interface (see the module docstring)."""

    def __init__(self, spec: NetSpec, *, timeout_s: float, output_bytes: int,
                 probe_timeout_ms: int = 250, probe_retries: int = 3) -> None:  # fmt: skip
        super().__init__(spec, probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries)
        self._limits = (timeout_s, output_bytes)
        self.sandbox: CommandSandbox  # set on entering
        self._looking: CommandSandbox | None = None  # its read-only twin
        self.restores: list[float] = []

    def __enter__(self) -> Self:
        super().__enter__()
        try:
            self.converge()
            timeout_s, output_bytes = self._limits
            domains = sorted({p.domain for p in self.spec.ports} - set(self.spec.devices))
            self.sandbox = CommandSandbox(
                self.emu,
                self.spec.devices,
                timeout_s=timeout_s,
                output_bytes=output_bytes,
                switches=domains,
                vty_dirs={r: str(g.root(r)) for r, g in self.daemons.items()},
            )
        except BaseException:
            self.close()
            raise
        return self

    @property
    def groups(self) -> list:
        return list({id(g): g for g in self.daemons.values()}.values())

    def restore(self) -> None:
        started = time.perf_counter()
        for group in self.groups:
            group.stop()
        routers = [r.name for r in self.spec.routers]
        self.emu._shell({r: f"{FLUSH_FRR} 2>/dev/null; true" for r in routers})
        # vtysh changes reach the kernel through zebra, unseen by the emulator's dirty set
        self.emu._dirty.update(routers)
        self.emu.reset()
        configs = self.frr_configs()
        for group in self.groups:
            # fresh folders: a stale zebra socket would let ospfd and bgpd start before
            # zebra listens, and they retry their connection only seconds later
            group.write_configs({r: configs[r] for r in group.routers})
            group.start()
        self.restore_services()
        self.converge()
        self.restores.append(time.perf_counter() - started)

    def apply(self, injection: Injection) -> None:
        device = injection.device
        if injection.how == "vtysh":
            if device not in self.daemons:
                raise InjectionFailed(f"vtysh injection on {device}, which runs no FRR")
            out = self.vtysh(device, ["configure terminal", *injection.lines])
            if "% " in out:
                raise InjectionFailed(f"injecting on {device}: {out.strip()[:300]}")
            return
        if injection.how == "argv":
            result = self.emu.run(device, list(injection.lines), timeout_s=10.0)
            if result.timed_out:
                raise EnvironmentFailure(f"injection `{' '.join(injection.lines)}` timed out")
            if result.exit_code != 0:
                raise InjectionFailed(
                    f"injecting `{' '.join(injection.lines)}` on {device} exited "
                    f"{result.exit_code}: {result.output.strip()[:300]}"
                )
            return
        raise InjectionFailed(f"injections of kind {injection.how!r} are not supported yet")

    def shell(self, scripts: Mapping[str, str]) -> dict[str, tuple[int, str]]:
        return self.emu._shell(dict(scripts))

    def show(self, commands: Mapping[str, Sequence[str]]) -> dict[str, str]:
        out: dict[str, str] = {}
        for group in self.groups:
            mine = [r for r in group.routers if commands.get(r)]
            for cmds in {tuple(commands[r]) for r in mine}:
                same = [r for r in mine if tuple(commands[r]) == cmds]
                out.update(group.vtysh_all(same, list(cmds)))
        return out

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]:
        return self.emu.probe(flows)

    def flows(self) -> list[Flow]:
        return [*host_flows(self.spec), *self.edge_flows()]

    def devices(self) -> tuple[str, ...]:
        return (*self.spec.devices, *((INET,) if self.edge is not None else ()))

    def sandbox_for(self, read_only: bool) -> CommandSandbox:
        """The agent's sandbox; read-only (detect, localize) refuses what may change."""
        if not read_only:
            return self.sandbox
        if self._looking is None:
            s = self.sandbox
            self._looking = CommandSandbox(
                s.emulator, s.machines, timeout_s=s.timeout_s, output_bytes=s.output_bytes,
                switches=s.switches, vty_dirs=s.vty_dirs, read_only=True,
            )  # fmt: skip
        return self._looking

    # -- settling ----------------------------------------------------------------------
    def _protocol_commands(self) -> dict[str, list[str]]:
        out = {}
        for r in self.spec.routers:
            cmds = []
            if "ospfd" in r.daemons:
                cmds.append("show ip ospf neighbor json")
            if "bgpd" in r.daemons:
                cmds.append("show bgp summary json")
            out[r.name] = cmds
        return out

    def routing_state(self) -> tuple[str, bool, list[tuple[str, str]]]:
        """(a digest of every router's routes and neighbour states, whether one is in a
        transitional state, the idle BGP peers as (router, address))."""
        outs = self.show(self._protocol_commands())
        routes = self.shell({r.name: "ip -4 route show" for r in self.spec.routers})
        parts, moving, idle = [], False, []
        for r in self.spec.routers:
            states = []
            for doc in json_documents(outs.get(r.name, "")):
                if not isinstance(doc, dict):
                    continue
                for rid, entries in (doc.get("neighbors") or {}).items():
                    for e in entries if isinstance(entries, list) else []:
                        states.append(f"{rid} {e.get('ifaceName')} {e.get('nbrState')}")
                peers = (doc.get("ipv4Unicast") or {}).get("peers") or {}
                for address, peer in peers.items():
                    state = str(peer.get("state", ""))
                    states.append(f"{address} {state} {peer.get('peerState', '')}")
                    if state == "Idle" and peer.get("peerState", "OK") == "OK":
                        idle.append((r.name, address))
            text = "\n".join(sorted(states))
            moving |= any(t in text for t in TRANSITIONAL)
            parts += [routes[r.name][1], text]
        return "\x00".join(parts), moving, idle

    def settle(self, window_s: float) -> None:
        """Until the routing state stayed the same for `window_s` (sampled at least
        MIN_QUIET_SAMPLES times: a starved machine's clock runs while nothing else does)."""
        deadline = time.monotonic() + SETTLE_MAX_S
        last, since, samples, retried = None, time.monotonic(), 0, False
        while time.monotonic() < deadline:
            state, moving, idle = self.routing_state()
            if idle and not retried:
                for router, address in idle:
                    self.vtysh(router, [f"clear bgp {address}"])
                retried, moving = True, True
            if state != last or moving:
                last, since, samples = state, time.monotonic(), 0
            else:
                samples += 1
                if time.monotonic() - since >= window_s and samples >= MIN_QUIET_SAMPLES:
                    return
            time.sleep(POLL_S)
        raise EnvironmentFailure(
            f"{self.spec.name}: the routing state kept changing for {SETTLE_MAX_S:g} s"
        )


class LabPool:
    """Live labs by spec name; see the module docstring."""

    def __init__(self, cfg, max_live: int = 2) -> None:
        self.cfg = cfg
        self.max_live = max_live
        self._live: OrderedDict[str, ColdLab] = OrderedDict()
        self._used: set[str] = set()
        self.builds = 0

    def get(self, spec: NetSpec) -> ColdLab:
        """The lab of `spec`, healthy and converged (restored when it was used)."""
        lab = self._live.pop(spec.name, None)
        if lab is not None and spec.name in self._used:
            try:
                lab.restore()
            except Exception as err:  # a lab whose restore failed is never reused
                log.warning("rebuilding %s: %s: %s", spec.name, type(err).__name__, err)
                lab.close()
                lab = None
        if lab is None:
            while len(self._live) >= self.max_live:
                _, old = self._live.popitem(last=False)
                old.close()
            lab = ColdLab(
                spec,
                timeout_s=self.cfg.command.timeout_s,
                output_bytes=self.cfg.command.output_bytes,
                probe_timeout_ms=self.cfg.probe.timeout_ms,
                probe_retries=self.cfg.probe.retries,
            ).__enter__()
            self.builds += 1
        self._used.add(spec.name)
        self._live[spec.name] = lab
        return lab

    @contextmanager
    def use(self, spec: NetSpec) -> Iterator[ColdLab]:
        lab = self.get(spec)
        try:
            yield lab
        except BaseException:
            if self._live.get(spec.name) is lab:
                del self._live[spec.name]
            lab.close()
            raise

    def close(self) -> None:
        errors = []
        while self._live:
            _, lab = self._live.popitem()
            try:
                lab.close()
            except Exception as err:  # raised below, after the others
                errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> LabPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
