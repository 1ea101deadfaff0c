#!/usr/bin/env bash
# The agent-code sandbox's process controls (emulators/pysandbox/_confine.c): a tiny C
# extension, so the sandbox never loads ctypes. Built with the system compiler against
# the venv's Python; rebuilt when the source or this script changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt gcc python3-dev

py=.venv/bin/python
suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
target="emulators/pysandbox/_confine$suffix"
if ! stamp_ok confine emulators/pysandbox/_confine.c scripts/setup.d/60-pysandbox.sh \
        || [[ ! -f "$target" ]]; then
    echo "setup: building $target"
    include=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    gcc -O2 -Wall -Werror -shared -fPIC -I"$include" \
        emulators/pysandbox/_confine.c -o "$target.tmp"
    mv "$target.tmp" "$target"
    stamp_set confine emulators/pysandbox/_confine.c scripts/setup.d/60-pysandbox.sh
fi
