#!/usr/bin/env bash
# The SLURM path (profiles/slurm) and the local cluster that tries and tests it
# (pipeline/cluster/, scripts/local-slurm.sh): Debian's SLURM controller, node daemon and
# client commands, munge, and slurmdbd on MariaDB for accounting (sacct is how the
# executor plugin follows jobs). Installed only: the packages' own services stay off
# (the local cluster runs private daemons of its own, on private ports and paths).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt_no_services slurmctld slurmd slurm-client slurmdbd munge mariadb-server
