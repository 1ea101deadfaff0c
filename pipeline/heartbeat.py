"""A long job is never silent: a heartbeat line once a minute while nothing moves.

A stage job (generate, run, the model job) runs inside `Heartbeat(job)`. A thread of its
own looks every few seconds; when no progress bar has moved and nothing was noted for
`interval_s` (NETGAUGE_HEARTBEAT_S, default 60), it writes one line, and again after each
further quiet interval:

    [netgauge] run app=routing/.../level=3/...: quiet for 1 min 1 s; progress: run app=…
    17/20 ep; waiting on: episode routing-L3-s0-00018 (3 min 2 s) [in emulators/mininet/
    process.py:41 run_capped]

What it waits on: the `waiting(what)` blocks open now, which code opens around what can
take long (an episode, a model request, an agent's answer, a model server's start, a
query's live validation; emulators may add lab builds), grouped by thread (outer > inner),
each thread with its innermost frame in the project's code or in Mininet's: where it really
is, also inside code that declared nothing (a node shell's read, a lab build). Progress is
every live tqdm bar (`desc n/total unit`).

Where the line goes: stderr (a Snakemake job's log), and the console when the job's
stderr is not it: the DAG's shell rules hand the console over as file descriptor 3
(`3>&2` before redirecting to the log) and say so in NETGAUGE_CONSOLE_FD.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TextIO

INTERVAL_ENV = "NETGAUGE_HEARTBEAT_S"
CONSOLE_ENV = "NETGAUGE_CONSOLE_FD"
DEFAULT_INTERVAL_S = 60.0
ROOT = str(Path(__file__).resolve().parents[1])
_WHERE = tuple(f"{ROOT}/{top}/" for top in ("pipeline", "generators", "emulators", "tests"))

_waits: dict[int, tuple[str, float, int]] = {}  # key -> (what, since, thread ident)
_lock = threading.Lock()
_ids = itertools.count()
_noted = [time.monotonic()]  # the last activity noted


@contextlib.contextmanager
def waiting(what: str) -> Iterator[None]:
    """Declare that this block waits on `what` (shown while it lasts)."""
    key = next(_ids)
    with _lock:
        _waits[key] = (what, time.monotonic(), threading.get_ident())
    try:
        yield
    finally:
        with _lock:
            _waits.pop(key, None)


def note() -> None:
    """Something visible happened (a result, a line printed): the quiet time starts over."""
    _noted[0] = time.monotonic()


def interval_from_env() -> float:
    try:
        value = float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


class Heartbeat:
    """`with Heartbeat("run app=…"):` — see the module docstring. `out` writes one line
    (default: stderr and the console's descriptor)."""

    def __init__(
        self, job: str, interval_s: float | None = None, out: Callable[[str], None] | None = None
    ) -> None:
        self.job = job
        self.interval_s = interval_s or interval_from_env()
        self._out = out or _default_out()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        self._bars: dict[int, float] = {}

    def __enter__(self) -> Heartbeat:
        note()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        last_beat = time.monotonic()
        while not self._stop.wait(min(self.interval_s / 4, 5.0)):
            if self._moved():
                note()
            now = time.monotonic()
            quiet = now - _noted[0]
            if quiet >= self.interval_s and now - last_beat >= self.interval_s:
                self._out(self.line(quiet))
                last_beat = now

    def _moved(self) -> bool:
        """Whether a progress bar moved since the last look."""
        seen = {id(bar): bar.n for bar in _bars()}
        moved = any(self._bars.get(key) != n for key, n in seen.items() if key in self._bars)
        self._bars = seen
        return moved

    def line(self, quiet: float) -> str:
        parts = [f"[netgauge] {self.job}: quiet for {_duration(quiet)}"]
        progress = [_bar(bar) for bar in _bars()]
        if progress:
            parts.append("progress: " + ", ".join(progress))
        now = time.monotonic()
        with _lock:
            waits = sorted(_waits.values(), key=lambda w: w[1])
        frames = sys._current_frames()
        by_thread: dict[int, list[str]] = {}
        for what, since, ident in waits:
            by_thread.setdefault(ident, []).append(f"{what} ({_duration(now - since)})")
        if by_thread:
            shown = [" > ".join(w) + _where(frames.get(i)) for i, w in by_thread.items()]
            parts.append("waiting on: " + "; ".join(shown))
        return "; ".join(parts)


def _bars() -> list:
    try:
        from tqdm import tqdm
    except ImportError:
        return []
    return [bar for bar in list(getattr(tqdm, "_instances", ())) if not bar.disable]


def _bar(bar) -> str:  # type: ignore[no-untyped-def]
    total = f"/{bar.total}" if bar.total else ""
    return f"{bar.desc} {bar.n}{total} {bar.unit}".strip()


def _where(frame: FrameType | None) -> str:
    """Where a waiting thread is: its innermost frame in the project's code or Mininet's."""
    while frame is not None and not _ours(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return ""
    path = frame.f_code.co_filename.removeprefix(ROOT + "/")
    return f" [in {path}:{frame.f_lineno} {frame.f_code.co_name}]"


def _ours(path: str) -> bool:
    return path.startswith(_WHERE) or "/mininet/" in path


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60} s"


def _default_out() -> Callable[[str], None]:
    streams: list[TextIO] = [sys.stderr]
    fd = os.environ.get(CONSOLE_ENV)
    if fd and fd.isdigit():
        with contextlib.suppress(OSError):
            streams.append(os.fdopen(os.dup(int(fd)), "w", buffering=1))

    def out(line: str) -> None:
        for stream in streams:
            with contextlib.suppress(OSError, ValueError):
                print(line, file=stream, flush=True)

    return out
