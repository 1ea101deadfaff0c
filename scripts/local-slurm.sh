#!/usr/bin/env bash
# A throwaway SLURM cluster on this machine (pipeline/cluster/): slurmctld, two slurmd
# nodes (ng1, ng2), munge and slurmdbd on a MariaDB of its own, as root, in a private
# state directory (default /var/lib/netgauge/slurm/local) on ports the kernel picks.
#
#   eval "$(scripts/local-slurm.sh start)"   # start it; this shell becomes a client
#   scripts/local-slurm.sh status            # keeper, daemons, nodes
#   scripts/local-slurm.sh stop              # stop it; nothing of it keeps running
#
# Options: --state-dir DIR, --nodes N, --cpus N (per node; default 2 nodes x 1 CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pipeline.cluster "$@"
