#!/usr/bin/env bash
# FRR for the routing app's levels 4-5 (generators/routing/frr/): zebra, ospfd and bgpd run
# as private daemons, one set per lab router, each confined by bubblewrap to its router's
# own folders; the system's frr service is never used (not started by the install, not
# enabled). vtysh is the agents' tool on those routers. Needs 20-mininet.sh's labs and
# bubblewrap (installed by the base setup for the command sandbox).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt_no_services frr bubblewrap
