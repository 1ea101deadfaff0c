#!/usr/bin/env bash
# Tools only the test suite uses: stress-ng oversubscribes the CPU in tests/test_load.py (the
# smoke grid's verdicts and every app's generated queries must not change under load) and
# in tests/test_k8s_verdicts.py (the k8s probes, asked again and again under load).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt stress-ng
