#!/usr/bin/env bash
# The report page's browser test: Debian's Chromium (headless) and a font for its text.
# matplotlib, gymnasium and datasets are Python packages pinned in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt chromium fonts-dejavu-core
