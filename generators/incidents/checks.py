"""What a read of an incidents lab checks beyond every host pair: pure data.

`Checks`: the large-packet pairs, the flows that must stay closed, single names, the lab's
DNS (`Dns`: every host's name asked from the first host of each LAN) and the benign
anomalies' evidence. Reading them is reading.py's; judging them verdict.py's.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from generators.incidents.faults.kinds import Evidence, Probe

SEP = "@@"


@dataclass(frozen=True)
class Checks:
    """What a read probes beyond every host pair: large-packet pairs, closed flows, names,
    and the benign anomalies' evidence (id -> commands and patterns)."""

    large: tuple[Probe, ...] = ()
    closed: tuple[Probe, ...] = ()
    names: tuple[Probe, ...] = ()
    benign: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)
    dns: Dns | None = None

    @classmethod
    def of(
        cls,
        probes: Iterable[Probe],
        benign: Mapping[str, tuple[Evidence, ...]],
        dns: Dns | None = None,
    ) -> Checks:
        probes = list(dict.fromkeys(probes))
        return cls(
            tuple(p for p in probes if p.kind == "large"),
            tuple(p for p in probes if p.kind == "closed"),
            tuple(p for p in probes if p.kind == "name"),
            dict(benign),
            dns,
        )


@dataclass(frozen=True)
class Dns:
    """The lab's names: every record asked of `server`, each by one of `clients` (round
    robin: client i asks records i, i + n, ...), one dig per client for all of its names
    (a server that does not answer costs a client one timeout per name it asks)."""

    server: str  # its address
    clients: tuple[str, ...]
    records: tuple[tuple[str, str], ...]  # (name, address)

    def asked(self, client: str) -> tuple[tuple[str, str], ...]:
        i = self.clients.index(client)
        return self.records[i :: len(self.clients)]

    def script(self, client: str) -> str:
        names = " ".join(f"{shlex.quote(n)} A" for n, _ in self.asked(client))
        at = shlex.quote(self.server)
        dig = f"dig @{at} +noall +answer +time=1 +tries=1 {names} 2>/dev/null" if names else ""
        return f"echo {SEP}dns; {dig or 'true'}; echo {SEP}end"

    def judge(self, client: str, text: str) -> dict[str, bool]:
        got: dict[str, set[str]] = {}
        for line in text.splitlines():
            fields = line.split()
            if len(fields) == 5 and fields[3] == "A":
                got.setdefault(fields[0].rstrip(".").lower(), set()).add(fields[4])
        return {
            f"name:{client}:{name}": got.get(name.lower()) == {address}
            for name, address in self.asked(client)
        }


def probe_id(p: Probe) -> str:
    if p.kind == "name":
        return f"name:{p.source}:{p.name}"
    if p.kind == "closed":
        return f"{p.protocol}:{p.source}>{p.target}"
    return f"large:{p.source}>{p.target}"
