"""What an incidents agent reads: the prompt of a query and the status after each step.

The prompt: the network's inventory and intent (generators/netlab/describe.py), the query's
benign anomalies documented as intended ("By design: ..."), what else the intent fixes,
the task (mitigate; detect and localize in pipeline/answers.py's words, localize with the
whole vocabulary), the ticket (levels 7-8), the tools and the budgets.

The status (`status`): which checks fail, by class. Level 6 lists the failing items
(at most SHOWN per class, with how many more); levels 7-8 give counts only, so a large
network must be diagnosed, not read off the observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from emulators.netcmd.svcctl import DIRECTIVES
from emulators.netcmd.tools import ALL_TOOL_NAMES
from generators.incidents.config import Tier
from generators.incidents.edge import (
    BACKUP_PRIORITY,
    EDGE_ADDR,
    INET,
    INET_ADDR,
    INET_HOST,
    INTERNET,
    MASTER_PRIORITY,
    dns_name,
    edge_of,
)
from generators.incidents.faults import security
from generators.incidents.faults.kinds import Fault
from generators.incidents.lab import host_lans
from generators.lab.pool import CommandConfig
from generators.lab.reply import REPLY_FORMAT
from generators.netlab.describe import describe
from generators.netlab.spec import NetSpec
from pipeline.api import Vocabulary, task_text

SHOWN = 8  # items listed per class at level 6
LARGE = 1500  # reading.LARGE

CLASSES = (  # (id prefix, what fails, in the status's words)
    ("works:icmp:", "ICMP echo between host pairs"),
    ("works:tcp:", "TCP echo (port 7) between host pairs"),
    ("works:udp:", "UDP echo (port 7) between host pairs"),
    ("works:large:", f"large packets ({LARGE:,} bytes, DF) between probed pairs"),
    ("works:name:", "names that must resolve"),
    ("closed:", "flows that must stay closed but answer"),
    ("intent:adjacency:", "OSPF adjacencies not Full (router interface)"),
    ("intent:session:", "BGP sessions not Established (router peer)"),
    ("intent:route:", "routes not learned by the intended protocol (router prefix)"),
    ("intent:kernel:", "kernel routes added (+) or missing (-) against the intent"),
    ("intent:rule:", "devices whose policy-routing rules differ from the intent"),
    ("intent:filter:", "devices whose packet filters differ from the intent"),
    ("intent:link:", "interfaces whose state, MTU, bridge or addresses differ"),
    ("intent:path:", "path intents not met"),
    ("intent:ecmp:", "ECMP intents not met"),
    ("intent:vrrp:", "VRRP groups whose VIP is not held by their master alone (VRID)"),
    ("intent:service:", "service daemons whose configuration differs from the intent"),
    ("benign:", "items marked 'By design' that were changed"),
)


def _item(prefix: str, violation: str) -> str:
    rest = violation[len(prefix) :]
    return rest.replace(">", " -> ").replace(":", " ", 1)


def shown(machine: str, command: str, output: str) -> str:
    """A command as a step shows it: the echo, then its output."""
    return f"{machine}$ {command}\n{output.rstrip() or '(no output)'}"


def status(
    violations: Iterable[str], totals: Mapping[str, int], mode: str,
    head: str = "Checks failing now:",
) -> str:  # fmt: skip
    """The checks failing, per class (mode "pairs": listed; "counts": counted)."""
    found = sorted(violations)
    if not found:
        return "Every check passes: the network meets its intent."
    lines = [head]
    for prefix, what in CLASSES:
        mine = [v for v in found if v.startswith(prefix)]
        if not mine:
            continue
        total = totals.get(prefix)
        count = f"{len(mine)} of {total}" if total else f"{len(mine)}"
        line = f"  {what}: {count}"
        if mode == "pairs":
            shown = ", ".join(_item(prefix, v) for v in mine[:SHOWN])
            more = f" (and {len(mine) - SHOWN} more)" if len(mine) > SHOWN else ""
            line += f": {shown}{more}"
        lines.append(line)
    return "\n".join(lines)


def prompt(
    spec: NetSpec,
    tier: Tier,
    task: str,
    benign: Sequence[Fault],
    *,
    turns: int,
    read_bytes: int,
    ticket: str | None,
    vocabulary: Vocabulary | None,
    symptoms: str | None = None,
    command: CommandConfig | None = None,
) -> str:
    # the lab's server runs DNS and DHCP (generators/incidents/lab.py)
    inventory = describe(spec).replace("(DNS, DHCP are placed here)", "(the DNS and DHCP server)")
    # an anomaly with no injection is built into the lab: describe() documents it already
    own = [f"  By design: {b.note or b.summary}." for b in benign if b.inject]
    documented = [*lab_intent(spec), *own]
    switches = ", L2 access switches (Linux bridges)" if spec.switches else ""
    parts = [
        "You are the network operator of an emulated network (Mininet: every device a "
        f"Linux network namespace; FRR routers running OSPF and/or BGP; Linux hosts{switches}).",
        "",
        inventory + ("\n" + "\n".join(documented) if documented else ""),
        "  The rest of the configuration is as built: every interface up (spare ports "
        "down) with its addresses and MTU 1500 unless stated; no static routes, "
        "policy-routing rules or packet filters beyond those stated; "
        f"{LARGE:,}-byte packets with DF cross the network.",
        "",
        _task(tier, task, vocabulary, policy=security.applies(spec)),
    ]
    if ticket:
        parts += ["", ticket]
    if symptoms:
        parts += ["", symptoms]
    parts += ["", _tools(task), _budget(tier, task, turns, read_bytes, command or CommandConfig())]
    return "\n".join(parts)


def lab_intent(spec: NetSpec) -> list[str]:
    """The intent of what the incidents lab adds to its NetSpec (generators/incidents/
    lab.py): the internet edge, the names, the VRRP gateways, the security policy."""
    out = []
    edge = edge_of(spec)
    nssa = "(those of NSSA areas excepted) " if any(a.kind == "nssa" for a in spec.areas) else ""
    if edge is not None:
        out.append(
            f"  Internet: {edge.router} {edge.intf} is the uplink to the internet ({INET} "
            f"{INET_ADDR}; {INTERNET} beyond it), learned by OSPF from {edge.router}. Hosts "
            f"{nssa}reach {INET_HOST} over TCP and UDP, masqueraded "
            f"as {EDGE_ADDR}; from the internet, TCP port 7 of {EDGE_ADDR} reaches "
            f"{edge.dnat_device} (DNAT) and nothing else but replies is admitted."
        )
    dns = next((s for s in spec.services if s.kind == "dns"), None)
    if dns is not None:
        example = next(h.name for h in spec.hosts if h.role == "host")
        out.append(
            f"  DNS: {dns.device} ({dns.address.split('/')[0]}, dnsmasq) answers <host>.lab "
            f"for every host ({example} is {dns_name(example)}) to every LAN."
        )
        if host_lans(spec):
            # a player read "the VIP" on a leaf-spine lab, which has no VRRP
            vip = " (the VIP where VRRP runs)" if spec.vrrp else ""
            out.append(
                "  DHCP: the same dnsmasq serves every host LAN a pool .100-.199 (leases of "
                f"1h) with the hosts' gateway as router{vip}, through "
                "a DHCP relay (dnsmasq) on the router holding the LAN's gateway address."
            )
    if spec.vrrp:
        pairs = sorted({(g.master, g.backup) for g in spec.vrrp})
        out.append(
            f"  VRRP (keepalived): each VLAN's hosts route through its VIP .254, VRID = the "
            f"VLAN id, held by the pair's master (priority {MASTER_PRIORITY}; the backup "
            f"{BACKUP_PRIORITY}, preempting): " + ", ".join(f"{m} over {b}" for m, b in pairs) + "."
        )
    return [*out, *security.intent_lines(spec)]


def _task(tier: Tier, task: str, vocabulary: Vocabulary | None, *, policy: bool = False) -> str:
    count = (
        "There is one problem."
        if tier.faults == (1, 1)
        else "There may be more than one problem, and one may hide another."
    )
    if task == "localize":
        return task_text(task, vocabulary, count)
    if task == "detect":
        # what a faulty network of the tier may hold, as localize lists its kinds: a
        # healthy network cannot be told apart by pinging 2,000 pairs in 50 turns
        if tier.detect_silent:
            scope = (
                "If anything is wrong, every flow still works: what may differ is what the "
                "intent states beyond reachability (the protocol state, paths, ECMP, VRRP "
                "masters and addresses, what stays closed)."
            )
        else:
            scope = "If anything is wrong, it may be anything the intent states."
        return task_text(task, vocabulary, scope)
    policy_check = "the security policy (what it closes stays closed), " if policy else ""
    return (
        "Task: something is wrong: the network does not meet its intent. Find every "
        "problem and fix it, so that every check holds: every host pair over ICMP, TCP "
        "and UDP (echo on port 7), large packets, the protocol state and paths stated, "
        f"{policy_check}and nothing configured beyond what is stated. {count} Never change "
        "what the intent marks 'By design' "
        "(that is unsafe), and never break what works."
    )


def _tools(task: str) -> str:
    return (
        f"{REPLY_FORMAT} The command runs on that machine only (a router, switch or "
        "host), without a shell. On the routers, `vtysh -c 'LINE' [-c 'LINE' ...]` talks "
        "to FRR, the lines in order as in an interactive session (e.g. -c 'configure "
        "terminal' -c 'interface r1-eth1' -c 'ip ospf cost 10'); `show` lines only look. "
        f"Other tools: {', '.join(ALL_TOOL_NAMES)} (as on a Linux host; ping needs -c N). "
        "Service daemons have no CLI of their own; `svcctl SERVICE show` prints a daemon's "
        "configuration, `svcctl SERVICE set DIRECTIVE VALUE` replaces the line with the "
        "same key (or adds it) and `svcctl SERVICE unset DIRECTIVE KEY` removes it, the "
        "daemon restarting with it (SERVICE dns or dhcp on the DNS server, vrrp on a VRRP "
        f"router). Directives, spelled as dnsmasq and keepalived spell them: {_directives()}."
    )


def _directives() -> str:
    """svcctl's directives, one example each (emulators/netcmd/svcctl.py)."""
    by: dict[str, list[str]] = {}
    for (service, _), directive in DIRECTIVES.items():
        by.setdefault(service, []).append(f"`{directive.example}`")
    return "; ".join(f"{service}: {', '.join(examples)}" for service, examples in by.items())


def _budget(tier: Tier, task: str, turns: int, read_bytes: int, command: CommandConfig) -> str:
    if task == "mitigate":
        seen = (
            "which checks fail (listed)"
            if tier.symptoms == "pairs"
            else "how many checks of each kind fail (not which: find out with the tools)"
        )
        after = (
            f"After each command you see its output and {seen}. Routing needs a few "
            "seconds after a change; the checks wait for it. The task ends as soon as every "
            "check passes and keeps passing."
        )
    else:
        after = "After each command you see its output."
    return (
        f"{after} You have {turns} turns and may read {read_bytes // 1024} KiB of output in "
        "all; past that, output is withheld (commands still run). One command is stopped "
        f"when its output passes {command.output_bytes // 1024} KiB or after "
        f"{command.timeout_s:g} s (a resource_limit or timeout step, its output cut there)."
    )
