#!/usr/bin/env bash
# Mininet for the routing app (emulators/mininet/): Debian's Mininet 2.3 with Linux-bridge
# switches (no Open vSwitch), the network tools the command sandbox allows, and nft, with
# which a reset deletes the iptables tables an episode created (iptables-nft cannot). Only /usr/bin/python3 imports Debian's `mininet`, so the project venv
# (made from that interpreter) gets a link to that one package: not the whole of
# /usr/lib/python3/dist-packages, whose other packages would shadow the pinned ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt mininet bridge-utils iproute2 iputils-ping iptables nftables net-tools procps

site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
target=/usr/lib/python3/dist-packages/mininet
if [[ "$(readlink "$site/mininet" 2>/dev/null)" != "$target" ]]; then
    echo "setup: linking Debian's mininet package into .venv"
    rm -rf "${site:?}/mininet"
    ln -s "$target" "$site/mininet"
fi
