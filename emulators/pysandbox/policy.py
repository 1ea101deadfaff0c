"""What untrusted code may do inside a sandbox child: allowed modules, audit hook, builtins.

The audit hook is the enforcement: it sees every audited action (CPython's audit
events table), including actions reached through `__subclasses__()` escapes, and
refuses all but a short allowlist of harmless events. The guarded `__import__` only
gives a friendlier message for the common case. Everything in this module runs in the
forked child, next to the hostile code, so the hook keeps its decision inputs in
default arguments (immutable, and `__defaults__`/`__code__` writes are audited) and is
referenced by nothing but the interpreter's hook list.

The exceptions below are raised *to the untrusted code*, never to the pipeline.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import pkgutil
import sys
import types
from collections.abc import Callable
from typing import Any

from pipeline.errors import NetGaugeError

# Top-level modules agent code may import; their submodules are allowed too. All of them
# are imported in the zygote, because a chrooted child cannot load anything new.
ALLOWED_MODULES = frozenset(
    {
        "networkx",
        "math",
        "cmath",
        "itertools",
        "collections",
        "functools",
        "heapq",
        "statistics",
        "re",
        "json",
        "operator",
        "copy",
        "random",
        "bisect",
        "string",
        "typing",
        "dataclasses",
        "decimal",
        "fractions",
        "enum",
        "textwrap",
        "pprint",
        "__future__",
    }
)

# Audit events that carry no side effect outside the child's own memory. Everything
# else (open, os.*, socket.*, ctypes.*, subprocess.*, gc.*, marshal.*, code.__new__,
# sys.settrace, sys.addaudithook, resource.*, ...) is refused.
_HARMLESS_EVENTS = frozenset(
    {
        "exec",  # exec() of code compiled from source; needed by the entry point itself
        "compile",  # networkx's argmap compiles wrappers on first call
        "builtins.id",  # copy.deepcopy, networkx internals
        "object.__getattr__",  # reads of __code__/__defaults__/tb_frame; no side effect
        "sys._getframe",  # collections.namedtuple, typing
        "function.__new__",  # networkx isomorphism helpers; a new function, not new bytecode
        "time.sleep",  # only spends wall time, which the zygote bounds
        "marshal.dumps",  # the graph-diff fast path (records.py); loading stays refused
    }
)

_PROCESS_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn", "os.fork", "subprocess.")
_PROCESS_EVENTS = frozenset({"os.system", "os.startfile", "pty.spawn"})
_SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})


class SandboxBlocked(NetGaugeError):
    """Raised by the audit hook or the guarded builtins when agent code tries a refused action."""


class BlockedImport(SandboxBlocked, ImportError):
    """An import of a module outside `ALLOWED_MODULES` (an ImportError, so fallbacks work)."""


class BlockedAction(SandboxBlocked, PermissionError):
    """A refused action: file, network, process, signal, ctypes or interpreter tampering."""


def describe_event(event: str, args: tuple[Any, ...]) -> str:
    """The one-line reason shown to the agent; only formats plain str/bytes/int arguments."""
    first = args[0] if args else None
    detail = repr(first) if type(first) in (str, bytes, int) else ""
    if event == "open":
        return f"blocked: file access is not allowed (open {detail})"
    if event.startswith("socket."):
        return f"blocked: network access is not allowed ({event})"
    if event in _PROCESS_EVENTS or event.startswith(_PROCESS_PREFIXES):
        return f"blocked: starting processes is not allowed ({event})"
    if event.startswith("ctypes."):
        return f"blocked: ctypes is not allowed ({event})"
    if event in _SIGNAL_EVENTS:
        return f"blocked: sending signals is not allowed ({event})"
    if event.startswith(("os.", "shutil.", "glob.", "tempfile.")):
        return f"blocked: filesystem operation {event!r} is not allowed"
    if event == "import":
        return import_refusal(first if type(first) is str else "?")
    if event in ("object.__setattr__", "object.__delattr__"):
        return "blocked: replacing a function's __code__ is not allowed"
    return f"blocked: operation {event!r} is not allowed"


def is_allowed_module(name: str) -> bool:
    return name.partition(".")[0] in ALLOWED_MODULES


def import_refusal(name: str) -> str:
    if is_allowed_module(name):
        return f"blocked: module {name!r} is not available in the sandbox"
    allowed = ", ".join(sorted(ALLOWED_MODULES - {"__future__"}))
    return f"blocked: import of module {name!r} is not allowed (allowed: {allowed})"


def preload_allowed_modules() -> list[str]:
    """Import every allowed module and its submodules; return those that failed to import."""
    failed = []
    for root in sorted(ALLOWED_MODULES):
        module = importlib.import_module(root)
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), f"{root}."):
            if ".tests" in info.name or info.name.endswith((".conftest", ".__main__")):
                continue
            try:
                importlib.import_module(info.name)
            except ImportError as exc:  # optional dependency missing: the module stays unavailable
                failed.append(f"{info.name}: {exc}")
    return failed


def compile_networkx_wrappers() -> int:
    """Compile every lazily-built networkx argmap wrapper now; return how many there were.

    On its first call an argmap wrapper swaps in compiled bytecode (`func.__code__ = ...`),
    which the child's hook refuses; doing it once in the zygote also saves each child the
    compile time.
    """
    from networkx.utils.decorators import argmap

    stubs = [c for c in argmap.__call__.__code__.co_consts if isinstance(c, types.CodeType)]
    count = 0
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and any(obj.__code__ is stub for stub in stubs):
            argmap._lazy_compile(obj)
            count += 1
    return count


def install_audit_hook() -> list[str]:
    """Install the refusing audit hook; return the (advisory) list of refused actions."""
    log: list[str] = []

    def hook(
        event: str,
        args: tuple[Any, ...],
        _harmless: frozenset[str] = _HARMLESS_EVENTS,
        _blocked: type[BlockedAction] = BlockedAction,
        _blocked_import: type[BlockedImport] = BlockedImport,
        _describe: Callable[[str, tuple[Any, ...]], str] = describe_event,
        _log: list[str] = log,
        _type: type[type] = type,
        _str: type[str] = str,
        _len: Callable[[Any], int] = len,
    ) -> None:
        if event in _harmless:
            return
        # networkx's argmap rewrites __defaults__; only bytecode swaps are refused.
        if (
            event in ("object.__setattr__", "object.__delattr__")
            and _type(args[1]) is _str
            and args[1] != "__code__"
        ):
            return
        # From here on the hook must raise: anything it calls failing only changes the message.
        message = _describe(event, args)
        if _len(_log) < 20:
            _log.append(message)
        if event == "import":
            raise _blocked_import(message)
        raise _blocked(message)

    sys.addaudithook(hook)
    return log


def guarded_builtins(log: list[str]) -> dict[str, Any]:
    """A copy of the builtins with `__import__` limited to the allowlist and `open` refused.

    Refusals are appended to `log`, like the audit hook's.
    """
    real_import = builtins.__import__

    def refuse(error: SandboxBlocked) -> SandboxBlocked:
        if len(log) < 20:
            log.append(str(error))
        return error

    def guarded_import(
        name: str,
        globals: dict[str, Any] | None = None,  # the names __import__ itself uses
        locals: dict[str, Any] | None = None,
        fromlist: tuple[str, ...] | list[str] = (),
        level: int = 0,
    ) -> Any:
        if level != 0:
            raise refuse(BlockedImport("blocked: relative imports are not allowed"))
        if type(name) is not str or not is_allowed_module(name):
            raise refuse(BlockedImport(import_refusal(str(name))))
        return real_import(name, globals, locals, fromlist, level)

    def refused_open(*args: Any, **kwargs: Any) -> Any:
        raise refuse(BlockedAction(describe_event("open", args)))

    table = dict(vars(builtins))
    table["__import__"] = guarded_import
    table["open"] = refused_open
    return table


class CappedOutput:
    """A write-only text stream that keeps the first `cap` bytes and counts the rest."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._parts: list[str] = []
        self._kept = 0  # characters kept; a character is >= 1 byte, so this over-keeps
        self._total = 0

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._total += len(text)
        room = self._cap - self._kept
        if room > 0:
            piece = text[:room]
            self._parts.append(piece)
            self._kept += len(piece)
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        data = "".join(self._parts).encode("utf-8", "replace")
        if len(data) <= self._cap and self._total == self._kept:
            return data.decode("utf-8")
        kept = data[: self._cap].decode("utf-8", "ignore")
        return f"{kept}\n[output cut: kept the first {self._cap} bytes of {self._total} characters]"
