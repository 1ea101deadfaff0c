"""The README's table of fault kinds, generated from the registry (so it cannot drift).

`python -m generators.incidents.catalogue_doc` prints it; `--write` replaces the part of
generators/incidents/README.md between the markers; tests/test_incidents.py checks that
the README holds exactly what the registry gives.
"""

from __future__ import annotations

import sys
from pathlib import Path

from generators.incidents.faults import kinds as catalogue

README = Path(__file__).with_name("README.md")
BEGIN, END = "<!-- kinds:begin (catalogue_doc.py) -->", "<!-- kinds:end -->"
FAMILIES = ("chain", "ring", "mesh", "leafspine", "campus", "isp")
SIZES = ("small", "medium", "large", "xlarge")


def table() -> str:
    rows = [
        "| kind | family | what is wrong | component named | verdict checks | labs | masks |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in catalogue.kinds(benign=None):
        labs = "all" if set(kind.topologies) >= set(FAMILIES) else ", ".join(
            f for f in FAMILIES if f in kind.topologies
        )  # fmt: skip
        if kind.sizes is not None:  # the security policy's kinds: where the policy is
            labs += f" ({', '.join(s for s in SIZES if s in kind.sizes)} labs)"
        rows.append(
            f"| `{kind.id}`{' (benign)' if kind.benign else ''} | {kind.family} | "
            f"{kind.meaning} | {kind.component} | {', '.join(sorted(kind.checks))} | "
            f"{labs} | {', '.join(f'`{m}`' for m in kind.masks) or '—'} |"
        )
    faults = sum(1 for _ in catalogue.kinds())
    benign = sum(1 for _ in catalogue.kinds(benign=True))
    rows.append("")
    rows.append(f"{faults} fault kinds and {benign} benign anomalies are registered.")
    return "\n".join(rows)


def written(text: str) -> str:
    """`text` (the README) with the table between the markers replaced."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if argv[1:] == ["--write"]:
        README.write_text(written(README.read_text()))
    else:
        print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
