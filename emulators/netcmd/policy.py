"""The command sandbox's policy: one command string -> an argv to run, or a refusal.

No shell is ever involved: the string is split with `shlex` (POSIX rules) and executed
as an argv. Shell syntax is refused outright rather than passed along as text, so an
agent learns at once that `a; b`, `a | b`, `a > f`, `$(…)` do not work here. The tool
must be on the allowlist (tools.RULES), is run by its absolute path, and its arguments
must pass that tool's rule. A leading bare `sudo` is dropped: commands already run as
root inside the machine.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass

from emulators.netcmd import kinds, vtysh
from emulators.netcmd.tools import RULES, TOOL_NAMES, check_sysctl
from pipeline.untrusted import argv_refusal

MAX_COMMAND_CHARS = 1000
SHELL_CHARS = {
    ";": "a command list (;)",
    "|": "a pipe (|)",
    "&": "& / && (background or command lists)",
    ">": "a redirection (>)",
    "<": "a redirection (<)",
    "`": "command substitution (`…`)",
    "$": "variables or substitution ($)",
    "\\": "backslash escapes",
    "\n": "more than one line",
    "\r": "a carriage return",
    "\0": "a NUL byte",
}
SEARCH_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
TOOL_DIRS = ("/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/")
ALLOWED = ", ".join(TOOL_NAMES)


@dataclass(frozen=True)
class Checked:
    """The policy's decision on one command."""

    argv: tuple[str, ...]  # what runs (absolute tool path first); () when refused
    reason: str | None = None  # why it was refused, shown to the agent
    writes: tuple[str, ...] = ()  # /proc/sys files the command may write (sysctl -w)

    @property
    def allowed(self) -> bool:
        return self.reason is None


def refuse(reason: str) -> Checked:
    return Checked((), reason)


def tool_path(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def check(command: str) -> Checked:
    """Decide whether `command` may run, and as which argv."""
    if not isinstance(command, str) or not command.strip():
        return refuse("the command is empty")
    if len(command) > MAX_COMMAND_CHARS:
        return refuse(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    unfit = argv_refusal(command)  # before anything reads it: no program could take it
    if unfit:
        return refuse(f"the command cannot be passed to a program: {unfit}")
    for char, what in SHELL_CHARS.items():
        if char in command:
            return refuse(
                f"shell syntax is not available: the command contains {what}; send exactly "
                "one command per turn, without pipes, redirections or substitutions"
            )
    try:
        argv = shlex.split(command)
    except ValueError as err:
        return refuse(f"the command cannot be split into words: {err}")
    if argv and argv[0] == "sudo":
        argv = argv[1:]
        if argv and argv[0].startswith("-"):
            return refuse("sudo options are not allowed (commands already run as root)")
    if not argv:
        return refuse("the command is empty")
    name = argv[0]
    if "/" in name:
        if not name.startswith(TOOL_DIRS) or name.count("/") != name.rstrip("/").count("/"):
            return refuse(f"{name!r} is not an allowed tool; allowed: {ALLOWED}")
        name = name.rsplit("/", 1)[1]
    for arg in argv[1:]:
        why = kinds.netdev_refusal(arg)
        if why:
            return refuse(why)
    writes: list[str] = []
    if name == "vtysh":  # routers running FRR only; the sandbox binds the router's socket
        reason = vtysh.check_vtysh(argv[1:], vtysh.DAEMONS).reason
    elif name == "sysctl":
        reason, writes = check_sysctl(argv[1:])
    elif name in RULES:
        reason = RULES[name](argv[1:])
    else:
        return refuse(
            f"'{name}' is not an allowed tool here; allowed: {ALLOWED} "
            "(network tools only; they act only on the machine named in the reply)"
        )
    if reason is not None:
        return refuse(reason)
    path = tool_path(name)
    if path is None:
        return refuse(f"'{name}' is not installed on this machine")
    return Checked((path, *argv[1:]), writes=tuple(writes))
