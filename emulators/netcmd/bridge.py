"""`bridge` arguments (iproute2 6.1), read as bridge/bridge.c, link.c and fdb.c read them.

Like `ip`, every word is matched with iproute2's matches(): any prefix of a name, the
first name in the tool's own order winning. So `bridge l s` is `bridge link set` (do_link
tries "set" before "show") and `bridge f s` is `bridge fdb show` (fdb has no "set"); the
global `-n` is `-netns` and `-b` is `-batch`.

Only the listings are allowed: `bridge link show` and `bridge fdb show` (with their
filters). A port is moved between bridges with `ip link set PORT master BR | nomaster`,
whose state the lab's reset restores; the port flags `bridge link set` would change
(learning, flooding, isolation) are not part of that state, so they are not offered.
"""

from __future__ import annotations

import re

from emulators.netcmd.iproute import OPTION_WHY, dispatch, read_globals

# bridge/bridge.c: the option loop in order; (name, takes a value).
BRIDGE_OPTIONS = [
    ("-help", False), ("-Version", False), ("-stats", False), ("-statistics", False),
    ("-details", False), ("-timestamp", False), ("-family", True), ("-4", False),
    ("-6", False), ("-color", False), ("-netns", True), ("-compressvlans", False),
    ("-force", False), ("-json", False), ("-pretty", False), ("-oneline", False), ("-batch", True),
]  # fmt: skip
BRIDGE_OPTIONS_ALLOWED = {"-help", "-Version", "-stats", "-statistics", "-details",
                          "-timestamp", "-4", "-compressvlans", "-json", "-pretty",
                          "-oneline", "-color"}  # fmt: skip
BRIDGE_OBJECTS = ["link", "fdb", "mdb", "vlan", "vni", "monitor", "help"]
BRIDGE_VERBS = {
    "link": [("set", "set"), ("change", "set"), ("show", "show"), ("lst", "show"),
             ("list", "show"), ("help", "help")],
    "fdb": [("add", "add"), ("append", "append"), ("replace", "replace"),
            ("delete", "delete"), ("get", "get"), ("show", "show"), ("lst", "show"),
            ("list", "show"), ("flush", "flush"), ("help", "help")],
}  # fmt: skip
BRIDGE_ALLOWED = {"show", "get", "help"}
# The filters `show` reads, each followed by a value.
SHOW_KEYS = {"dev", "master", "br", "brport", "vlan", "state"}
SHOW_FLAGS = {"dynamic", "self"}
WORD_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,17}$")


def check_bridge(args: list[str]) -> str | None:
    options, rest, why = read_globals(args, BRIDGE_OPTIONS, "bridge")
    if why is None:
        for name, _, word in options:
            if name not in BRIDGE_OPTIONS_ALLOWED:
                why = OPTION_WHY.get(name, "it is not available here")
                why = f"bridge option {word} ({name}) is not allowed: {why}"
                break
    if why:
        return why
    if not rest:
        return "bridge needs an object: bridge link show or bridge fdb show"
    obj = dispatch(rest[0], BRIDGE_OBJECTS)
    if obj not in BRIDGE_VERBS:
        shown = f" ({obj})" if obj else ""
        return f"'bridge {rest[0]}'{shown} is not allowed; use bridge link show or bridge fdb show"
    if len(rest) == 1:
        return None
    verb = dispatch(rest[1], BRIDGE_VERBS[obj])
    if verb is None:
        return f"'bridge {obj} {rest[1]}' is not a command of bridge {obj}"
    if verb not in BRIDGE_ALLOWED:
        hint = " (move ports with ip link set PORT master BRIDGE)" if obj == "link" else ""
        return f"'bridge {obj} {rest[1]}' ({verb}) is not allowed: only show{hint}"
    words = rest[2:]
    i = 0
    while i < len(words):
        word = words[i]
        if word in SHOW_FLAGS:
            i += 1
            continue
        if word not in SHOW_KEYS or i + 1 >= len(words) or not WORD_RE.match(words[i + 1]):
            return f"bridge {obj} {verb}: {word!r} is not allowed; use e.g. dev PORT or br BRIDGE"
        i += 2
    return None
