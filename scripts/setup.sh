#!/usr/bin/env bash
# Install everything NetGauge needs on a Debian 12 machine, as root. Idempotent and
# quick when nothing is missing: apt runs only for absent packages, pip only when
# pyproject.toml or a setup script changed since the last install (stamps in .venv).
# Each feature with install steps of its own has a script in scripts/setup.d/, run in
# name order after the project venv exists.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_apt python3 python3-venv python3-dev git util-linux procps bubblewrap stress-ng

# Debian's own Python 3.11: the one that also imports Debian's Mininet.
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv with /usr/bin/python3"
    /usr/bin/python3 -m venv .venv
fi

if ! stamp_ok project pyproject.toml scripts/setup.sh; then
    echo "setup: installing Python packages into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[dev]'
    stamp_set project pyproject.toml scripts/setup.sh
fi

for step in scripts/setup.d/*.sh; do
    [[ -e "$step" ]] || continue
    bash "$step"
done
