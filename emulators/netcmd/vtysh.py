"""vtysh as a sandboxed agent command: its options read as vtysh reads them, its lines as
FRR's CLI reads them, and the jail it runs in.

The boundary is the kernel's: the daemons are confined to their own router's folders
(generators/routing/frr/daemons.py) and the agent's vtysh runs as the `frr` user in a
jail (`jail`) whose only view of FRR is its router's vty socket folder, bound read-only
at /var/run/frr/vty, with a /etc/frr/vtysh.conf of ours (no integrated configuration:
`write memory` makes each daemon write its own file, inside its own folder). No shell,
no ping, no other router's socket and no host file is in reach, whatever vtysh is told.

The checks below are the second line. Options: FRR 8.4's getopt_long string
"be:c:d:nf:H:mEhCwN:ut" with its long names; only -c/--command, -d/--daemon (a daemon
the router runs), -E/--echo and -n/--noerror are allowed; -b (boot), -f (a file), -e,
-C, -m, -w, -H, -N, -u, -t, --config_dir and --vty_socket (forced to the router's
socket) are refused. Lines: FRR matches every word by unique prefix (`wr mem`, `conf t`),
so the first word of each line is resolved against the known command words and refused
when it could stand for one that reaches files, the host or other machines (`log file`,
`copy`, `dump`, `start-shell`, `ping`, `banner motd file`, `password`, `line vty`, ...);
`no` and `do` are read through; `write` is allowed only as `write memory|file|terminal`.
Any word holding `/` must be an IPv4 prefix (no paths).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from emulators.jail import Jail, library_binds
from emulators.netcmd import getopt
from pipeline.untrusted import argv_refusal

SHORTS = "be:c:d:nf:H:mEhCwN:ut"
LONGS = {
    "boot": getopt.NONE, "eval": getopt.REQUIRED, "command": getopt.REQUIRED,
    "daemon": getopt.REQUIRED, "vty_socket": getopt.REQUIRED, "config_dir": getopt.REQUIRED,
    "inputfile": getopt.REQUIRED, "histfile": getopt.REQUIRED, "echo": getopt.NONE,
    "dryrun": getopt.NONE, "help": getopt.NONE, "noerror": getopt.NONE, "mark": getopt.NONE,
    "writeconfig": getopt.NONE, "pathspace": getopt.REQUIRED, "user": getopt.NONE,
    "timestamp": getopt.NONE,
}  # fmt: skip
OPTION_WHY = {
    "-b": "vtysh -b applies the boot configuration",
    "--boot": "vtysh -b applies the boot configuration",
    "-f": "vtysh -f reads commands from a file; give them with -c",
    "--inputfile": "vtysh -f reads commands from a file; give them with -c",
    "-e": "use -c for commands",
    "--eval": "use -c for commands",
    "--vty_socket": "the vty socket is the router's own and fixed",
    "--config_dir": "the configuration folder is fixed",
    "-N": "the path space is fixed",
    "--pathspace": "the path space is fixed",
    "-w": "vtysh -w writes an integrated configuration",
    "--writeconfig": "vtysh -w writes an integrated configuration",
    "-H": "vtysh -H writes a history file",
    "--histfile": "vtysh -H writes a history file",
}
ALLOWED_OPTIONS = {"-c", "--command", "-d", "--daemon", "-E", "--echo", "-n", "--noerror"}
MAX_LINES = 20
MAX_LINE_CHARS = 300

# First words of the lines an operator needs for OSPF and BGP (any CLI node).
ALLOWED_WORDS = frozenset(
    [
        "show",
        "configure",
        "end",
        "exit",
        "quit",
        "router",
        "interface",
        "network",
        "neighbor",
        "address-family",
        "exit-address-family",
        "ip",
        "passive-interface",
        "ospf",
        "timers",
        "bgp",
        "redistribute",
        "area",
        "write",
        "clear",
        "default-information",
        "distance",
        "maximum-paths",
        "route-map",
        "match",
        "set",
        "on-match",
        "description",
        "bandwidth",
        "shutdown",
        "auto-cost",
        "log-adjacency-changes",
        "list",
        "terminal",
        "default-metric",
        "max-metric",
        "table-map",
        "aggregate-address",
        "distribute-list",
        "call",
        "continue",
        "neighbor",
        "summary-address",
        "capability",
        "compatible",
        "refresh",
        "distribute-list",
        "exit-vrf",
    ]
)
# Words whose commands reach files, the host, other machines or authentication.
FORBIDDEN_WORDS = frozenset(
    [
        "log",
        "copy",
        "dump",
        "start-shell",
        "banner",
        "service",
        "password",
        "enable",
        "line",
        "username",
        "ping",
        "traceroute",
        "telnet",
        "ssh",
        "mtrace",
        "rpki",
        "frr",
        "agentx",
        "hostname",
        "domainname",
        "module",
        "fpm",
        "debug",
        "watchfrr",
        "allow-external-route-update",
        "mpls",
        "vrf",
        "zebra",
        "segment-routing",
        "bfd",
        "pbr",
        "key-chain",
        "file",
        "source",
        "include",
        "output",
        "tftp",
        "scp",
        "ftp",
        "http",
    ]
)
KNOWN = ALLOWED_WORDS | FORBIDDEN_WORDS
WRITE_TARGETS = ("memory", "file", "terminal")
PREFIX_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$")


@dataclass(frozen=True)
class VtyshCommand:
    """A checked vtysh argv (without the program) and its lines, or why it is refused."""

    args: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    daemons: tuple[str, ...] = ()
    reason: str | None = None


def resolve(word: str, words: frozenset[str] = KNOWN) -> list[str]:
    """The known words `word` may stand for: itself if known, else every word it is a
    prefix of (FRR's CLI completes unique prefixes)."""
    word = word.lower()
    if word in words:
        return [word]
    return sorted(w for w in words if w.startswith(word))


def line_refusal(line: str) -> str | None:
    """Why one CLI line is refused, or None."""
    words = line.split()
    if not words or words[0].startswith(("!", "#")):
        return None
    for word in words:
        if "/" in word and not PREFIX_RE.match(word):
            return f"vtysh: {word!r} looks like a path; only IPv4 prefixes may hold '/'"
    while words and words[0].lower() in ("no", "do"):
        words = words[1:]
    if not words:
        return None
    found = resolve(words[0])
    bad = [w for w in found if w in FORBIDDEN_WORDS]
    if bad:
        return f"vtysh: '{words[0]}' may stand for `{bad[0]}`, which is not available here"
    if not found:
        return (
            f"vtysh: '{words[0]}' is not an allowed command here; allowed first words: "
            "show, configure, router, interface, ip, network, neighbor, address-family, "
            "no, do, end, exit, clear, write memory, ..."
        )
    if found == ["write"] and len(words) > 1:
        targets = [t for t in WRITE_TARGETS if t.startswith(words[1].lower())]
        if len(targets) != 1:
            return "vtysh: only `write memory`, `write file` and `write terminal` are allowed"
    return None


def check_vtysh(args: list[str], daemons: tuple[str, ...]) -> VtyshCommand:
    """Check vtysh's arguments as vtysh 8.4 reads them; `daemons`: the router's daemons."""
    try:
        options, operands = getopt.parse(args, SHORTS, LONGS)
    except getopt.GetoptError as err:
        return VtyshCommand(reason=f"vtysh: {err}")
    if operands:
        return VtyshCommand(
            reason=f"vtysh takes no operands; give commands with -c: {operands[0]!r}"
        )
    lines, chosen = [], []
    for opt in options:
        if opt.name not in ALLOWED_OPTIONS:
            why = OPTION_WHY.get(opt.name, f"vtysh option {opt.spelled} is not allowed")
            return VtyshCommand(reason=why)
        if opt.name in ("-c", "--command"):
            lines.append(opt.value or "")
        elif opt.name in ("-d", "--daemon"):
            if opt.value not in daemons:
                return VtyshCommand(
                    reason=f"vtysh -d: this router runs {', '.join(daemons)}; not {opt.value!r}"
                )
            chosen.append(opt.value)
    if not lines:
        return VtyshCommand(reason="vtysh needs one or more -c 'COMMAND' (no interactive shell)")
    if len(lines) > MAX_LINES:
        return VtyshCommand(reason=f"vtysh: at most {MAX_LINES} -c commands at once")
    for line in lines:
        if len(line) > MAX_LINE_CHARS:
            return VtyshCommand(
                reason=f"vtysh: a command is longer than {MAX_LINE_CHARS} characters"
            )
        unfit = argv_refusal(line)
        if unfit:
            return VtyshCommand(reason=f"vtysh: a -c line cannot be passed to vtysh: {unfit}")
        why = line_refusal(line)
        if why:
            return VtyshCommand(reason=why)
    return VtyshCommand(tuple(args), tuple(lines), tuple(chosen))


def read_only(lines: tuple[str, ...]) -> bool:
    """Whether every line only looks (`show ...`, `list`, `do show ...`)."""
    for line in lines:
        words = line.split()
        if words and words[0].lower() == "do":
            words = words[1:]
        if not words or words[0].startswith(("!", "#")):
            continue
        if resolve(words[0]) not in (["show"], ["list"]):
            return False
    return True


VTY_DIR = "/var/run/frr/vty"
# The agent's vtysh.conf: no PAM login for the jail's user (vtysh asks PAM unless the user
# is listed `nopassword`), no integrated configuration.
VTYSH_CONF = "username frr nopassword\n"
DAEMONS = ("zebra", "ospfd", "bgpd")


def jail(path: str, router_dir: str) -> Jail:
    """The jail of one agent vtysh: see the module docstring. `router_dir`, named after
    the router, holds its `vty` socket folder and the `vtysh.conf` made for it
    (VTYSH_CONF). The jail's host name is the router's: vtysh adds a `hostname` line of its
    own host to `show running-config`, beside the daemons' (one line when they agree)."""
    uid, _, vty_gid = _frr_ids()
    return Jail(
        dirs=("/etc", "/etc/frr", "/var", "/var/run", "/var/run/frr"),
        ro_binds=[
            path,
            *library_binds(),
            (f"{router_dir}/vty", VTY_DIR),
            (f"{router_dir}/vtysh.conf", "/etc/frr/vtysh.conf"),
        ],
        ro_binds_try=("/etc/passwd", "/etc/group", "/etc/ld.so.cache"),
        tmpfs=("/tmp",),
        uid=uid,
        gid=vty_gid,
        env={"PATH": "/usr/bin", "HOME": "/tmp"},
        hostname=Path(router_dir).name,
    )


def _frr_ids() -> tuple[int, int, int]:
    import grp
    import pwd

    user = pwd.getpwnam("frr")
    return user.pw_uid, user.pw_gid, grp.getgrnam("frrvty").gr_gid


def argv(path: str, command: VtyshCommand) -> list[str]:
    """The argv that runs inside the jail: the router's socket forced first."""
    return [path, "--vty_socket", VTY_DIR, *command.args]
