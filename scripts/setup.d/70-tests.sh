#!/usr/bin/env bash
# Tools only the test suite uses: stress-ng oversubscribes the CPU in tests/test_load.py
# (verdicts and generated queries must not change under load).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt stress-ng
