#!/usr/bin/env bash
# Kathará for emulator=kathara (emulators/kathara/): Debian's docker.io (run only as
# NetGauge's own dockerd, never the system one), the pinned `kathara` package, and what
# Docker Hub would otherwise provide: a base image built with debootstrap from Debian's
# mirror, and the rootfs of the local network plugin (emulators/kathara/netplugin.py).
# Both are built once into /var/lib/netgauge/kathara/rootfs/ and imported into our
# dockerd the first time a lab starts (emulators/kathara/daemon.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt docker.io debootstrap iproute2 util-linux

KATHARA_PIN=3.8.3
if ! .venv/bin/python -c "import Kathara.version as v; assert v.CURRENT_VERSION == '$KATHARA_PIN'" \
    2>/dev/null; then
    echo "setup: installing kathara==$KATHARA_PIN into .venv"
    .venv/bin/pip install -q "kathara==$KATHARA_PIN"
fi

# One rootfs serves the device image and the plugin (which needs python3 and ip).
ROOTFS=/var/lib/netgauge/kathara/rootfs
PACKAGES=iproute2,iputils-ping,iptables,procps,net-tools,python3
if [[ "$(cat "$ROOTFS.done" 2>/dev/null)" != "$PACKAGES" ]]; then
    echo "setup: building the Kathará base rootfs with debootstrap (bookworm, minbase)"
    rm -rf "$ROOTFS" "$ROOTFS.tmp"
    mkdir -p "$(dirname "$ROOTFS")"
    # The machine's own Debian mirror (deb822 sources or a classic sources.list line).
    MIRROR=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{print $2}' | grep -v security | head -n1 || true)
    [[ -n "$MIRROR" ]] || MIRROR=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null \
        | awk '{print $2}' | grep -v security | head -n1 || true)
    [[ -n "$MIRROR" ]] || { echo "setup: no Debian mirror found in /etc/apt" >&2; exit 1; }
    debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS.tmp" \
        "$MIRROR" >"$ROOTFS.log" 2>&1 \
        || { echo "setup: debootstrap failed, see $ROOTFS.log" >&2; exit 1; }
    rm -rf "$ROOTFS.tmp"/var/cache/apt/archives/*.deb "$ROOTFS.tmp"/var/lib/apt/lists/*
    mv "$ROOTFS.tmp" "$ROOTFS"
    echo "$PACKAGES" >"$ROOTFS.done"
fi
