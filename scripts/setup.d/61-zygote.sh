#!/usr/bin/env bash
# The persistent jail of labs and clusters (emulators/zygote/*.c): a small C program,
# built with the system compiler; rebuilt when a source or this script changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

ensure_apt gcc libc6-dev

src=emulators/zygote
target=$src/ngzygote
sources=($src/ngzygote.h $src/ngzygote.c $src/root.c $src/turn.c $src/child.c)
if ! stamp_ok zygote "${sources[@]}" scripts/setup.d/61-zygote.sh || [[ ! -x "$target" ]]; then
    echo "setup: building $target"
    gcc -O2 -Wall -Wextra -Werror -o "$target.tmp" "${sources[@]:1}"
    mv "$target.tmp" "$target"
    stamp_set zygote "${sources[@]}" scripts/setup.d/61-zygote.sh
fi
