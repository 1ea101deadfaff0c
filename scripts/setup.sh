#!/usr/bin/env bash
# Install everything NetGauge needs on a Debian 12 machine, as root. Idempotent and
# quick when nothing is missing: apt runs only for absent packages, pip only when
# pyproject.toml changed since the last install (a stamp in .venv records it).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(python3 python3-venv python3-dev git util-linux procps)
VENV=.venv
STAMP="$VENV/.netgauge-installed"

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $EUID -ne 0 ]]; then
        echo "setup: missing Debian packages: ${missing[*]}; run as root or install them" >&2
        exit 1
    fi
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's own Python 3.11: the one that will also import Debian's Mininet.
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup: creating $VENV with /usr/bin/python3"
    /usr/bin/python3 -m venv "$VENV"
fi

want=$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$want" ]]; then
    echo "setup: installing Python packages into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[dev]'
    echo "$want" > "$STAMP"
fi
