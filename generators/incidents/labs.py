"""The labs the app validates and plays on, behind one small interface (`LiveLab`).

What the app needs of a running lab, and nothing more: its NetSpec and the agent's command
sandbox (`sandbox_for(read_only)`); the flows that must work and the devices to read;
`restore()` back to the healthy converged network; `apply(injection)`, a trusted change;
`settle(window_s)` until the routing state is quiet (BGP sessions left idle by a change
retried at once, as generators/routing/frr/lab.py explains); `shell(scripts)`, read-only
scripts in the devices' namespaces in one round; `show(commands)`, trusted `show`
lines on routers, answered over the daemons' kept-open vty sessions (RouterDaemons.answer:
no vtysh process per router per poll); `probe(flows)`. Today's implementation is `ColdLab`, over
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
from emulators.netcmd.servicegate import ServiceGate
from emulators.netcmd.svcctl import SvcctlError
from emulators.probe import Flow
from generators.incidents import settling
from generators.incidents.checks import Dns
from generators.incidents.edge import INET, dns_name
from generators.incidents.faults.kinds import Injection
from generators.incidents.lab import IncidentLab
from generators.incidents.settling import Reading
from generators.netlab.live import host_flows, json_documents
from generators.netlab.spec import NetSpec
from pipeline.api import EnvironmentFailure

log = logging.getLogger(__name__)
POLL_S = 0.3
VRRP_S = 20.0  # longest wait for VRRP masters to hold their VIPs
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

    def sandbox_for(self, read_only: bool) -> CommandSandbox | ServiceGate: ...

    def service_state(self) -> dict[str, str]: ...  # "srv1|dns" -> its configuration

    def dns(self) -> Dns | None: ...  # the names every LAN must resolve, where DNS runs


class ColdLab(IncidentLab):
    """The catalogue's lab (generators/incidents/lab.py: a NetLab with its internet edge,
    DNS and VRRP) with the app's interface (see the module docstring)."""

    def __init__(self, spec: NetSpec, *, timeout_s: float, output_bytes: int,
                 probe_timeout_ms: int = 250, probe_retries: int = 3) -> None:  # fmt: skip
        super().__init__(spec, probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries)
        self._limits = (timeout_s, output_bytes)
        self.sandbox: CommandSandbox  # set on entering
        self._gates: dict[bool, CommandSandbox | ServiceGate] = {}  # by read_only
        self.restores: list[float] = []

    def __enter__(self) -> Self:
        super().__enter__()
        try:
            self.converge()
            self.wait_vrrp()
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
        self.wait_vrrp()
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
        if injection.how == "service":
            if self.services is None:
                raise InjectionFailed(f"service injection on {device}: the lab runs no services")
            try:
                self.services.set_trusted(device, injection.lines)
            except SvcctlError as err:
                raise InjectionFailed(f"injecting on {device}: {err}") from err
            return
        raise InjectionFailed(f"injections of kind {injection.how!r} are not supported")

    def shell(self, scripts: Mapping[str, str]) -> dict[str, tuple[int, str]]:
        return self.emu._shell(dict(scripts))

    def show(self, commands: Mapping[str, Sequence[str]]) -> dict[str, str]:
        out: dict[str, str] = {}
        for group in self.groups:
            out.update(group.answer({r: commands[r] for r in group.routers if commands.get(r)}))
        return out

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]:
        return self.emu.probe(flows)

    def flows(self) -> list[Flow]:
        return [*host_flows(self.spec), *self.edge_flows()]

    def devices(self) -> tuple[str, ...]:
        return (*self.spec.devices, *((INET,) if self.edge is not None else ()))

    def sandbox_for(self, read_only: bool) -> CommandSandbox | ServiceGate:
        """The agent's sandbox (svcctl going to the lab's services); read-only (detect,
        localize) refuses what may change."""
        if read_only not in self._gates:
            s = self.sandbox
            inner = s if not read_only else CommandSandbox(
                s.emulator, s.machines, timeout_s=s.timeout_s, output_bytes=s.output_bytes,
                switches=s.switches, vty_dirs=s.vty_dirs, read_only=True,
            )  # fmt: skip
            self._gates[read_only] = inner if self.services is None else ServiceGate(
                inner, self.services
            )  # fmt: skip
        return self._gates[read_only]

    def service_state(self) -> dict[str, str]:
        if self.services is None:
            return {}
        return {
            f"{device}|{service}": repr((d.config.canonical(), d.alive()))
            for (device, service), d in sorted(self.services.daemons.items())
        }

    def dns(self) -> Dns | None:
        server = next((s for s in self.spec.services if s.kind == "dns"), None)
        if server is None or self.services is None:
            return None
        clients = tuple(lan.hosts[0] for lan in self.spec.lans if lan.kind == "hosts" and lan.hosts)
        records = tuple((dns_name(h.name), h.address.split("/")[0]) for h in self.spec.hosts)
        return Dns(server.address.split("/")[0], clients, records)

    def wait_vrrp(self, timeout_s: float = VRRP_S) -> None:
        """Until every VRRP group's master holds its VIP (keepalived elects in seconds)."""
        wanted = {}
        for g in self.spec.vrrp:
            intf = next(a.intf for a in self.spec.lan(g.lan).routers if a.router == g.master)
            wanted[(g.master, intf)] = f" {g.vip}/"
        deadline = time.monotonic() + timeout_s
        while wanted:
            outs = self.shell({r: "ip -4 -o addr show" for r, _ in wanted})
            wanted = {
                (r, i): vip
                for (r, i), vip in wanted.items()
                if not any(f" {i} " in line and vip in line for line in outs[r][1].splitlines())
            }
            if not wanted:
                return
            if time.monotonic() > deadline:
                raise EnvironmentFailure(f"{self.spec.name}: VRRP masters without VIP: {wanted}")
            time.sleep(POLL_S)

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

    def routing_state(self) -> Reading:
        """Every router's routes and addresses, and its neighbours' states (settling.py)."""
        outs = self.show(self._protocol_commands())
        # addresses too: a VRRP VIP moving between routers is part of settling
        script = "ip -4 route show; ip -4 -o addr show"
        routes = self.shell({r.name: script for r in self.spec.routers})
        neighbours, idle = {}, []
        for r in self.spec.routers:
            for doc in json_documents(outs.get(r.name, "")):
                if not isinstance(doc, dict):
                    continue
                for rid, entries in (doc.get("neighbors") or {}).items():
                    for e in entries if isinstance(entries, list) else []:
                        key = f"{r.name}|{e.get('ifaceName')}|{rid}"
                        neighbours[key] = str(e.get("nbrState", ""))
                peers = (doc.get("ipv4Unicast") or {}).get("peers") or {}
                for address, peer in peers.items():
                    state, why = str(peer.get("state", "")), peer.get("peerState", "OK")
                    neighbours[f"{r.name}|{address}"] = f"{state} {why}"
                    if state == "Idle" and why == "OK":
                        idle.append((r.name, address))
        return Reading({r: out for r, (_, out) in routes.items()}, neighbours, tuple(idle))

    def settle(self, window_s: float) -> None:
        """Until the routing state stayed the same for `window_s` (settling.py)."""

        def retry(idle: tuple[tuple[str, str], ...]) -> None:
            for router, address in idle:
                self.daemons[router].answer({router: [f"clear bgp {address}"]})

        settling.settle(self.routing_state, window_s, name=self.spec.name, retry_idle=retry)


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
