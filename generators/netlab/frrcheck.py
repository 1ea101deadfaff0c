"""Rendered FRR configuration checked by the daemons themselves (`<daemon> --dryrun`).

Each file is read by the real daemon in check mode (`-C`: parse the configuration, apply
it, exit), in the jail the labs run it in (generators/routing/frr/daemons.py: jail_argv)
and in a network namespace of its own, so nothing of the host is read or changed (its
crash-log folder lands in the jail's /var/tmp). The daemon exits 0 whatever it read; what
it refused is in its output and log: "% ..." (a command that failed, e.g. "Not an internal
neighbor") and "... on config line N" (a command it does not know). Needs root.

`distinct(specs)` keeps one configuration of each shape (numbers and names aside), so a
whole catalogue is checked by checking each shape once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from generators.netlab.frrconf import all_configs
from generators.netlab.spec import NetSpec
from generators.routing.frr.daemons import frr_ids, jail_argv

PARALLEL = 8
TIMEOUT_S = 30.0
REFUSED = re.compile(r"^%|on config line \d+|[Ee]rror.*config", re.MULTILINE)
_SHAPE = re.compile(r"[0-9]+")


def distinct(specs: Iterable[NetSpec]) -> dict[str, tuple[str, str]]:
    """{label: (daemon, text)}: the first configuration of every shape among `specs`
    (the label names where it comes from: `<lab>/<router>/<daemon>`)."""
    seen: dict[tuple[str, str], str] = {}
    out = {}
    for spec in specs:
        for router, daemons in all_configs(spec).items():
            for daemon, text in daemons.items():
                shape = (daemon, _SHAPE.sub("0", text.replace(router, "R")))
                if shape not in seen:
                    seen[shape] = label = f"{spec.name}/{router}/{daemon}"
                    out[label] = (daemon, text)
    return out


def refusals(configs: dict[str, tuple[str, str]]) -> dict[str, list[str]]:
    """{label: what the daemon refused} for the configurations it did not accept whole
    (configs: {label: (daemon, text)}); empty when every one was accepted."""
    uid, gid, _ = frr_ids()
    base = Path(tempfile.mkdtemp(prefix="netgauge-frrcheck-"))
    try:
        os.chmod(base, 0o755)
        jobs = []
        for n, (label, (daemon, text)) in enumerate(sorted(configs.items())):
            root = base / str(n)
            for sub in ("etc", "run", "vty"):
                (root / sub).mkdir(parents=True)
                os.chown(root / sub, uid, gid)
            os.chmod(root, 0o755)
            path = root / "etc" / f"{daemon}.conf"
            path.write_text(text)
            os.chown(path, uid, gid)
            jobs.append((label, daemon, root))
        found: dict[str, list[str]] = {}
        for start in range(0, len(jobs), PARALLEL):
            batch = jobs[start : start + PARALLEL]
            procs = [(label, daemon, root, _start(root, daemon)) for label, daemon, root in batch]
            for label, daemon, root, proc in procs:
                out, _ = proc.communicate(timeout=TIMEOUT_S)
                log = root / "run" / f"{daemon}.log"
                text = out + (log.read_text(errors="replace") if log.exists() else "")
                bad = [line.strip() for line in text.splitlines() if REFUSED.search(line)]
                if proc.returncode != 0:
                    bad.append(f"exit {proc.returncode}: {text.strip()[-300:]}")
                if bad:
                    found[label] = bad
        return found
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _start(root: Path, daemon: str) -> subprocess.Popen:
    argv = ["unshare", "--net", *jail_argv(root, daemon), "--dryrun"]
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def check_specs(specs: Iterable[NetSpec]) -> dict[str, list[str]]:
    """`refusals` of every distinct configuration shape of `specs`."""
    return refusals(distinct(specs))
