# Shared helpers for scripts/setup.sh and scripts/setup.d/*.sh (sourced, not run).

# ensure_apt PKG...: install the Debian packages that are missing; a no-op otherwise.
ensure_apt() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    if [[ $EUID -ne 0 ]]; then
        echo "setup: missing Debian packages: ${missing[*]}; run as root or install them" >&2
        return 1
    fi
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if [[ ! -f /tmp/.netgauge-apt-updated ]]; then
        apt-get update -qq && touch /tmp/.netgauge-apt-updated
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# stamp_ok NAME FILE...: true when the stamp for NAME matches the hash of FILE...
# stamp_set NAME FILE...: record it. Stamps live in .venv/, so a new venv redoes them.
stamp_hash() { cat "$@" | sha256sum | cut -c1-16; }
stamp_ok() { local n=$1; shift; [[ -f ".venv/.stamp-$n" && "$(cat ".venv/.stamp-$n")" == "$(stamp_hash "$@")" ]]; }
stamp_set() { local n=$1; shift; stamp_hash "$@" > ".venv/.stamp-$n"; }

# ensure_apt_no_services PKG...: ensure_apt for packages whose system services NetGauge
# never uses (it runs private daemons of its own). The install starts none of them (a
# policy-rc.d saying so for its duration, unless the machine has one already) and, on a
# systemd machine, they are not enabled at boot either. A no-op when nothing is missing.
ensure_apt_no_services() {
    local missing=() pkg policy=/usr/sbin/policy-rc.d made="" rc=0 unit
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    if [[ $EUID -eq 0 && ! -e $policy ]]; then
        printf '#!/bin/sh\n# NetGauge setup: no service starts while it installs\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made=1
    fi
    ensure_apt "${missing[@]}" || rc=$?
    [[ -z $made ]] || rm -f "$policy"
    ((rc == 0)) || return "$rc"
    [[ -d /run/systemd/system ]] || return 0
    for unit in $(dpkg -L "${missing[@]}" 2>/dev/null | grep -E '/systemd/system/[^/]+\.service$' \
            | xargs -r -n1 basename | sort -u); do
        systemctl disable --quiet "$unit" 2>/dev/null || true
    done
}

# gpu_count: how many GPUs `nvidia-smi -L` lists ("GPU 0: ..." lines); 0 when the tool
# is missing, fails (no driver), hangs for 30 s, or lists none.
gpu_count() {
    local out
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo 0
        return
    fi
    out=$(timeout 30 nvidia-smi -L 2>/dev/null) || { echo 0; return; }
    grep -cE '^GPU [0-9]+: ' <<<"$out" || true
}
