"""An incidents lab: a NetSpec's NetLab plus the internet edge, DNS and VRRP it declares.

What the data-plane and services kinds need beyond generators/netlab's lab:
  - an internet edge (OSPF-only labs): a stub device `inet` (198.51.100.2/30, the
    "internet" address 203.0.113.1 on its loopback, no route back into the lab) on a new
    uplink of the edge router (an area-0 router, the first such), which masquerades what
    leaves through it and forwards TCP port 7 of its outside address to srv1 (DNAT). The
    edge announces 203.0.113.0/24 into OSPF (a static route, `redistribute static`) and
    the uplink's /30 (a passive `network`). Hosts in NSSA areas get no route to the
    internet (an NSSA takes no external routes and no default here): they are not
    probed towards it.
  - DNS and DHCP: dnsmasq on srv1, authoritative for `lab.`: `<host>.lab` (the host's
    name with `_` as `-`) for every host, listening on srv1's LAN port; a DHCP pool per
    host LAN (.100-.199, the LAN's gateway as router) served through a DHCP relay
    (dnsmasq, relay only) on the LAN's gateway router.
  - VRRP (campus): keepalived on both routers of every distribution pair, one group per
    VLAN (VRID = the VLAN id, VIP .254, priority 150 on the `a` router, 100 on `b`,
    preemption on); the VLAN's hosts route through the VIP.
  - the security policy (large and xlarge labs, faults/security.py): every router's INPUT chain
    rejects TCP and UDP port 7 from the LANs.
Names: the uplink is `<edge>-eth<k>` (the router's next free port number), domain `x1`.
The daemons run in their jails (daemons.py); svcctl reaches them through `services`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from emulators.base import Device, Interface, Lab
from emulators.probe import Flow
from generators.incidents.daemons import Daemon, Services
from generators.incidents.edge import (
    BACKUP_PRIORITY,
    EDGE_ADDR,
    EDGE_DOMAIN,
    EDGE_SUBNET,
    INET,
    INET_ADDR,
    INET_HOST,
    INTERNET,
    MASTER_PRIORITY,
    dhcp_range,
    dns_name,
    edge_of,
    edge_rules,
    gateway_port,
    host_gateway,
    internet_hosts,
    vrrp_gateways,
)  # fmt: skip
from generators.incidents.faults import security
from generators.incidents.svcconf import DNSMASQ_FIXED, Config
from generators.netlab.live import NetLab
from generators.netlab.spec import Lan, NetSpec


def host_lans(spec: NetSpec) -> list[Lan]:
    return [lan for lan in spec.lans if lan.kind == "hosts" and lan.hosts]


def dns_config(spec: NetSpec, server: str) -> Config:
    """dnsmasq on the server: names, and a DHCP pool per host LAN (tag l<lan>) handing out
    .100-.199 with the LAN's gateway as router, reached through the LAN's relay."""
    lines = [("interface", spec.host(server).intf)]
    lines += [("host-record", f"{dns_name(h.name)},{h.address.split('/')[0]}") for h in spec.hosts]
    for lan in host_lans(spec):
        first, last = dhcp_range(lan.subnet)
        lines.append(("dhcp-range", f"set:l{lan.id},{first},{last},255.255.255.0,1h"))
        gw = host_gateway(spec, lan.id)
        lines.append(("dhcp-option", f"tag:l{lan.id},option:router,{gw}"))
    return Config("dns", lines, fixed=DNSMASQ_FIXED)


def relay_configs(spec: NetSpec, server: str) -> dict[str, Config]:
    """dnsmasq as a DHCP relay only (no DNS) on every host LAN's gateway router."""
    out: dict[str, Config] = {}
    for lan in host_lans(spec):
        router, intf, local = gateway_port(spec, lan.id)
        config = out.setdefault(
            router, Config("relay", [], fixed=("port=0", "pid-file=/run/svc/daemon.pid"))
        )
        config.fixed = (*config.fixed, f"interface={intf}", f"dhcp-relay={local},{server}")
    return out


def vrrp_configs(spec: NetSpec) -> dict[str, Config]:
    out: dict[str, Config] = {}
    for g in spec.vrrp:
        lan = spec.lan(g.lan)
        for router, priority in ((g.master, MASTER_PRIORITY), (g.backup, BACKUP_PRIORITY)):
            intf = next(a.intf for a in lan.routers if a.router == router)
            config = out.setdefault(router, Config("vrrp", [], name=router))
            config.fixed = (*config.fixed, f"{g.vrid} {intf}")
            config.lines += [
                ("priority", f"{g.vrid} {priority}"),
                ("advert_int", f"{g.vrid} 1"),
                ("virtual_ipaddress", f"{g.vrid} {g.vip}/24"),
            ]
    return out


class IncidentLab(NetLab):
    """See the module docstring."""

    def __init__(self, spec: NetSpec, *, services: bool = True, edge: bool = True, **kw: Any):
        super().__init__(spec, **kw)
        self.edge = edge_of(spec) if edge else None
        self.with_services = services
        self.gateways = vrrp_gateways(spec) if services else {}
        self.services: Services | None = None
        self.healthy: dict[tuple[str, str], Config] = {}
        self._policy_routers = (
            frozenset(r.name for r in spec.routers) if security.applies(spec) else frozenset()
        )

    # -- what the lab is made of ---------------------------------------------------------
    def lab_model(self) -> Lab:
        lab = self.spec.to_lab()
        devices = [self._device(d) for d in lab.devices]
        direct = lab.direct
        if self.edge is not None:
            devices.append(
                Device(INET, (Interface(f"{INET}-eth0", EDGE_DOMAIN, (f"{INET_ADDR}/30",),
                                        alias="uplink to the lab's edge"),),
                       loopbacks=(f"{INET_HOST}/32",), role="host")
            )  # fmt: skip
            direct = (*direct, EDGE_DOMAIN)
        return dataclasses.replace(lab, devices=tuple(devices), direct=direct)

    def _device(self, device: Device) -> Device:
        if device.name in self.gateways:
            route = ("ip", "route", "add", "default", "via", self.gateways[device.name])
            return dataclasses.replace(device, startup=(route,))
        if device.name in self._policy_routers:
            # large and xlarge labs: the standing security policy (faults/security.py), built in
            # at start so the kernel snapshot holds it and every reset restores it
            device = dataclasses.replace(device, startup=(*device.startup, *security.startup()))
        edge = self.edge
        if edge is None or device.name != edge.router:
            return device
        alias = "internet uplink (NAT: masquerade out, TCP 7 in to srv1)"
        uplink = Interface(edge.intf, EDGE_DOMAIN, (f"{EDGE_ADDR}/30",), alias=alias)
        nat = (("ip", "route", "add", INTERNET, "via", INET_ADDR), *edge_rules(edge))
        return dataclasses.replace(
            device, interfaces=(*device.interfaces, uplink), startup=(*device.startup, *nat)
        )

    def frr_configs(self) -> dict[str, dict[str, str]]:
        configs = super().frr_configs()
        edge = self.edge
        if edge is not None:
            # The internet's route is a kernel route of the edge (its startup; FRR runs no
            # staticd here), redistributed into OSPF through a route-map naming it alone.
            mine = configs[edge.router]
            passive = f"interface {edge.intf}\n ip ospf passive\nexit\n!\n"
            policy = (
                f"ip prefix-list INTERNET seq 5 permit {INTERNET}\n!\n"
                "route-map INTERNET permit 10\n match ip address prefix-list INTERNET\nexit\n!\n"
            )
            width = f" maximum-paths {self.spec.ecmp_width}\n"
            extra = (
                f" redistribute kernel route-map INTERNET\n network {EDGE_SUBNET} area 0.0.0.0\n"
            )
            mine["ospfd"] = passive + policy + mine["ospfd"].replace(width, width + extra, 1)
        return configs

    # -- daemons -------------------------------------------------------------------------
    def _start(self) -> None:
        super()._start()
        if not self.with_services:
            return
        self.services = Services(self.emu.prefix, self.emu.netns_path, _ready)
        dns = next((s for s in self.spec.services if s.kind == "dns"), None)
        if dns is not None:
            self.services.add(dns.device, "dns", dns_config(self.spec, dns.device))
            for router, config in relay_configs(self.spec, dns.address).items():
                self.services.add(router, "relay", config)
        for router, config in vrrp_configs(self.spec).items():
            self.services.add(router, "vrrp", config)
        self.healthy = {k: d.config.copy() for k, d in self.services.daemons.items()}
        self.services.start()

    def close(self) -> None:
        if self.services is not None:
            self.services.remove()
            self.services = None
        super().close()

    def restore_services(self) -> list[str]:
        """Every daemon back to its healthy configuration: those restarted."""
        return self.services.restore(self.healthy) if self.services else []

    # -- intended flows beyond the host pairs ------------------------------------------
    def edge_flows(self) -> list[Flow]:
        """Hosts to the internet (TCP, UDP) and the internet to srv1 (DNAT). Not ICMP: the
        prober marks every echo of a round with one identifier, which masquerading
        rewrites for all but the first host (NAT keeps ICMP flows apart by identifier),
        so the target could not tell the probe's echoes; `ping` from a host works."""
        edge = self.edge
        if edge is None:
            return []
        flows = [
            Flow(h, INET, INET_HOST, p) for h in internet_hosts(self.spec) for p in ("tcp", "udp")
        ]
        return [*flows, Flow(INET, edge.dnat_device, EDGE_ADDR, "tcp")]


def _ready(daemon: Daemon) -> bool:
    pid = "vrrp.pid" if daemon.service == "vrrp" else "daemon.pid"
    return (daemon.folder / pid).exists()
