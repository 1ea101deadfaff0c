"""Reading a running incidents lab into an `Observed` (verdict.py judges it).

One read is: every host pair over ICMP, TCP and UDP and the must-stay-closed flows, in one
probe (emulators/probe.py); one round of scripts in every device's namespace (kernel
routes of every table, policy rules, packet filters, interfaces, and the large-packet
pings sent from that device); one vtysh round on the routers (OSPF neighbours, BGP
peers); and each benign anomaly's evidence, played through the agent's own sandbox (what
an agent would read).

Large-packet probes: `ping -M do -s <size - 28> -c 2 -i 0.2 -W 1` from the source (DF
set, so a smaller MTU on the way drops it or answers "frag needed"; one reply of two
counts), every ping of a source at once, after `ip route flush cache` (path MTUs learned
while a fault was there would fail them for minutes after its fix). The pairs
(`large_pairs`): the server and every host, both ways (every host's own port), and first
hosts of LANs whose intended paths, together, cross every router-router link that carries
traffic; plus every pair a fault or benign anomaly declares (kinds.Probe).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from emulators.netcmd.sandbox import Status
from emulators.probe import Flow
from generators.incidents.checks import SEP, Checks, probe_id
from generators.incidents.faults.kinds import Evidence, Probe
from generators.incidents.labs import LiveLab
from generators.incidents.verdict import Intent, Observed, walk
from generators.netlab.live import json_documents
from generators.netlab.spec import NetSpec
from pipeline.api import EnvironmentFailure

DEVICE_SCRIPT = (
    f"ip -j -4 route show table all; echo {SEP}; ip -j -4 rule show; echo {SEP}; "
    f"iptables-save 2>/dev/null; echo {SEP}; ip -j addr show"
)
# Hosts and switches: routes and interfaces (their rules and filters are the routers'
# business here; a read spawns four processes per router and two per other device).
PLAIN_SCRIPT = (
    f"ip -j -4 route show table all; echo {SEP}; echo '[]'; echo {SEP}; echo {SEP}; ip -j addr show"
)
ICMP_HEADERS = 28  # IPv4 + ICMP headers: ping's -s is the payload
LARGE = 1500  # bytes of a large probe, the whole IP packet: every intended MTU is 1500


def _ping(p: Probe) -> str:
    """One large echo, in the background (a source's pings run at once; `wait` ends them)."""
    size = max(0, p.size - ICMP_HEADERS)
    cmd = f"ping -M do -s {size} -c 2 -i 0.2 -W 1 -q {shlex.quote(p.address)} >/dev/null 2>&1"
    return f"({cmd}; echo {SEP}probe {shlex.quote(probe_id(p))} $?) &"


def _dig(p: Probe) -> str:
    cmd = (
        f"dig @{shlex.quote(p.address)} {shlex.quote(p.name)} A +short +time=2 +tries=2 2>/dev/null"
    )
    return f"echo {SEP}name {shlex.quote(probe_id(p))}; {cmd}; echo {SEP}end"


def read(lab: LiveLab, checks: Checks) -> Observed:
    spec = lab.spec
    flows = lab.flows()
    closed = {Flow(p.source, p.target, p.address, p.protocol): probe_id(p) for p in checks.closed}
    results = lab.probe([*flows, *closed])
    failed = frozenset(f"{f.protocol}:{f.source}>{f.target}" for f in flows if not results[f])
    closed_open = frozenset(pid for f, pid in closed.items() if results[f])
    routers = {r.name for r in spec.routers}
    scripts = {d: DEVICE_SCRIPT if d in routers else PLAIN_SCRIPT for d in lab.devices()}
    pings: dict[str, list[str]] = {}
    for p in checks.large:
        pings.setdefault(p.source, []).append(_ping(p))
    for source, lines in pings.items():
        # the source forgets the path MTUs it learned (a "fragmentation needed" seen while
        # a fault was there fails DF echoes for 10 minutes after its fix); the pings run
        # in a subshell, whose background jobs print no job-control notices (the node's
        # interactive shell would print "[1] <pid>" among the outputs)
        scripts[source] += f"; ip route flush cache; ({' '.join(lines)} wait)"
    for p in checks.names:
        scripts[p.source] += "; " + _dig(p)
    if checks.dns is not None:
        for client in checks.dns.clients:
            scripts[client] += "; " + checks.dns.script(client)
    outs = lab.shell(scripts)
    routes, rules, filters, links, probes = {}, {}, {}, {}, {}
    for device, (_, out) in outs.items():
        parts, extra = sections(out)
        if len(parts) != 4:
            raise EnvironmentFailure(f"reading {device}: {out[:300]!r}")
        try:
            routes[device] = [r for r in json.loads(parts[0] or "[]") if isinstance(r, dict)]
            rules[device] = [json.dumps(r, sort_keys=True) for r in json.loads(parts[1] or "[]")]
            links[device] = interfaces(json.loads(parts[3] or "[]"))
        except (ValueError, TypeError, AttributeError) as err:
            raise EnvironmentFailure(f"reading {device}: {type(err).__name__}: {err}") from err
        filters[device] = filter_rules(parts[2])
        probes |= _probe_results(extra, checks)
        if checks.dns is not None and device in checks.dns.clients:
            found = re.search(rf"{SEP}dns\n(.*?){SEP}end", extra, re.S)
            probes |= checks.dns.judge(device, found.group(1) if found else "")
    ospf, bgp = neighbours(lab.show(protocol_commands(spec)))
    benign = {
        bid: all(matches(lab, e) for e in evidence) for bid, evidence in checks.benign.items()
    }
    return Observed(
        failed, closed_open, probes, ospf, bgp, routes, rules, filters, links, benign,
        lab.service_state(),
    )  # fmt: skip


def sections(out: str) -> tuple[list[str], str]:
    """The four outputs of DEVICE_SCRIPT (separated by lines `@@`; the last is one line of
    JSON), and what the probes after it printed."""
    parts: list[list[str]] = [[]]
    extra: list[str] = []
    for line in out.split("\n"):
        if line == SEP and len(parts) < 4:
            parts.append([])
        elif len(parts) == 4 and (parts[3] or extra):
            extra.append(line)
        else:
            parts[-1].append(line)
    return ["\n".join(p).strip() for p in parts], "\n".join(extra)


def _probe_results(text: str, checks: Checks) -> dict[str, bool]:
    out: dict[str, bool] = {}
    expect = {probe_id(p): p.expect for p in checks.names}
    for m in re.finditer(rf"{SEP}probe (\S+) (\d+)", text):
        out[m.group(1)] = m.group(2) == "0"
    for m in re.finditer(rf"{SEP}name (\S+)\n(.*?){SEP}end", text, re.S):
        answers = m.group(2).split()
        out[m.group(1)] = expect.get(m.group(1), "") in answers
    return out


class EvidenceUnfit(EnvironmentFailure):
    """An evidence command the agent's sandbox stopped (its output passed the agent's cap,
    or it ran past the agent's time limit): evidence an agent cannot read. Validation
    rejects the draw that holds it (validate.py); in an episode it is the environment's."""


def matches(lab: LiveLab, evidence: Evidence) -> bool:
    """Whether `evidence` shows, read through the agent's read-only sandbox with the
    agent's own limits; EvidenceUnfit when the sandbox stopped the command."""
    result = lab.sandbox_for(True).run(evidence.machine, evidence.command)
    if result.status in (Status.TIMEOUT, Status.OUTPUT_LIMIT):
        raise EvidenceUnfit(
            f"evidence `{evidence.command}` on {evidence.machine} does not fit the agent's "
            f"bounds: {result.reason}"
        )
    return re.search(evidence.pattern, result.output, re.M) is not None


def filter_rules(text: str) -> list[str]:
    """iptables-save, as compared: each table's rules in order and its chains' policies
    other than ACCEPT (counters, comments and empty built-in chains left out)."""
    out, table = [], ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            name, policy = ([*line[1:].split(), "", ""])[:2]
            if policy not in ("ACCEPT", "-"):
                out.append(f"{table} :{name} {policy}")
        elif line.startswith("-"):
            out.append(f"{table} {line}")
    return out


def interfaces(addrs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """ifname -> its admin state, MTU, bridge and IPv4 addresses, as one string."""
    out = {}
    for link in addrs:
        if not isinstance(link, dict) or "ifname" not in link:
            continue
        flags = link.get("flags") or []
        v4 = sorted(
            f"{a.get('local')}/{a.get('prefixlen')}"
            for a in link.get("addr_info") or []
            if a.get("family") == "inet"
        )
        state = "up" if "UP" in flags else "down"
        out[str(link["ifname"])] = (
            f"{state} mtu {link.get('mtu')} master {link.get('master', '-')} {' '.join(v4)}"
        )
    return out


def protocol_commands(spec: NetSpec) -> dict[str, list[str]]:
    out = {}
    for r in spec.routers:
        cmds = []
        if "ospfd" in r.daemons:
            cmds.append("show ip ospf neighbor json")
        if "bgpd" in r.daemons:
            cmds.append("show bgp summary json")
        if cmds:
            out[r.name] = cmds
    return out


def neighbours(outs: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """({"router|interface|neighbour id": OSPF state}, {"router|peer": BGP state})."""
    ospf: dict[str, str] = {}
    bgp: dict[str, str] = {}
    for router, out in outs.items():
        for doc in json_documents(out):
            if not isinstance(doc, dict):
                continue
            for rid, entries in (doc.get("neighbors") or {}).items():
                for e in entries if isinstance(entries, list) else []:
                    intf = str(e.get("ifaceName", "")).split(":")[0]
                    ospf[f"{router}|{intf}|{rid}"] = str(e.get("nbrState", "")).split("/")[0]
            for address, peer in ((doc.get("ipv4Unicast") or {}).get("peers") or {}).items():
                bgp[f"{router}|{address}"] = str(peer.get("state", ""))
    return ospf, bgp


def large_pairs(intent: Intent, seen: Observed, size: int = LARGE) -> list[Probe]:
    """The server and every host, both ways; then first hosts of LANs whose intended
    paths, together, cross every router-router link that carries traffic (greedy: the
    pair covering most uncovered links first)."""
    spec = intent.spec
    out = []
    server = next((h for h in spec.hosts if h.role == "server"), None)
    for h in spec.hosts if server is not None else ():
        if h is not server:
            out.append(Probe("large", server.name, h.name, h.address.split("/")[0], size=size))
            out.append(Probe("large", h.name, server.name, server.address.split("/")[0],
                             size=size))  # fmt: skip
    firsts = [spec.host(lan.hosts[0]) for lan in spec.lans if lan.hosts]
    owners = intent.owners
    covers: dict[tuple[str, str], set[frozenset[str]]] = {}
    for a in firsts:
        gateway = owners.get(a.gateway)
        for b in firsts:
            if a is b or gateway is None:
                continue
            path = walk(intent, seen, gateway, b.address.split("/")[0])
            if isinstance(path, list):
                covers[(a.name, b.name)] = {frozenset(x) for x in itertools.pairwise(path)}
    todo = set().union(*covers.values()) if covers else set()
    while todo:
        (a, b), links = max(covers.items(), key=lambda kv: (len(kv[1] & todo), kv[0]))
        if not links & todo:
            break
        todo -= links
        target = spec.host(b)
        out.append(Probe("large", a, b, target.address.split("/")[0], size=size))
    return out
