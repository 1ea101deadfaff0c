#!/usr/bin/env bash
# Services and agent tools of the incidents catalogue's data-plane, L2 and services
# families (generators/incidents/): dnsmasq (DNS and DHCP for a lab's server LAN) and
# keepalived (VRRP on campus distribution pairs) run as private daemons, one per lab
# device, confined by bubblewrap to the device's own folder (generators/incidents/daemons.py);
# the system's services are never used (not started by the install, not enabled).
# traceroute, tracepath and dig are agent tools (emulators/netcmd/), run in the command
# jail like ip and ping. Needs 25-frr.sh's bubblewrap.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt_no_services dnsmasq-base keepalived traceroute iputils-tracepath bind9-dnsutils
