"""`python -m pipeline.cluster start|stop|status|env` (what scripts/local-slurm.sh runs).

start    start a local SLURM cluster (stopping what an earlier one left) and print the
         shell lines that make this shell its client
env      print those lines again:  eval "$(python -m pipeline.cluster env)"
status   the keeper, the daemons and the nodes
stop     stop it; nothing of it keeps running
serve    the keeper itself (start runs it in the background)
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.cluster import daemons, keeper
from pipeline.cluster.layout import DEFAULT_STATE_DIR, POLL_MAX_S, Layout, Spec
from pipeline.errors import EnvironmentFailure
from pipeline.slurm_executor import POLL_MAX_ENV


def _env_lines(layout: Layout) -> str:
    return (
        f"export SLURM_CONF={shlex.quote(str(layout.slurm_conf))}\n"
        f'export PATH={shlex.quote(str(layout.bin))}:"$PATH"\n'
        f"export {POLL_MAX_ENV}={POLL_MAX_S}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=("start", "stop", "status", "env", "serve"))
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"the cluster's private directory (default {DEFAULT_STATE_DIR})",
    )
    parser.add_argument("--nodes", type=int, default=2, help="slurmd daemons (default 2)")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs per node (default 1)")
    parser.add_argument("--owner-fd", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.cpus < 1:
        parser.error("--nodes and --cpus must be at least 1")
    layout = Layout(args.state_dir.resolve())
    spec = Spec(nodes=args.nodes, cpus=args.cpus)

    if args.command == "serve":
        return keeper.serve(layout, spec, args.owner_fd)
    if args.command == "start":
        try:
            _, ready = keeper.launch(layout, spec)
        except EnvironmentFailure as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(
            f"# local SLURM cluster up in {ready['start_s']} s: nodes "
            f"{', '.join(ready['nodes'])}; logs in {layout.log}",
            file=sys.stderr,
        )
        print(_env_lines(layout), end="")
        return 0
    if args.command == "env":
        print(_env_lines(layout), end="")
        return 0
    if args.command == "stop":
        gone = keeper.shutdown(layout)
        print(f"stopped: {', '.join(gone) or 'nothing was running'}")
        return 0
    pid = keeper._keeper_pid(layout)
    print(f"keeper: {pid or 'not running'}   state: {layout.root}")
    for found_pid, cmd in sorted(daemons.leftovers(layout).items()):
        print(f"  {found_pid:>7}  {cmd[:100]}")
    if pid:
        nodes = subprocess.run(
            ["sinfo", "-N", "-l"],
            env=layout.client_env(),
            text=True,
            capture_output=True,
            check=False,
        )
        print(nodes.stdout or nodes.stderr, end="")
    return 0 if pid else 1


if __name__ == "__main__":
    sys.exit(main())
