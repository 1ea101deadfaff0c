"""Length-prefixed frames between the parent and the zygote (8-byte big-endian length + body).

Per run the parent sends one frame holding `{"code": ...}` as JSON; the zygote answers
with two frames: a header it writes itself (trusted JSON) and the raw payload the child
wrote (untrusted JSON, possibly empty). Nothing crossing a frame is ever unpickled.
"""

from __future__ import annotations

import os
import select
import time

from pipeline.errors import EnvironmentFailure

_LENGTH_BYTES = 8


def write_frame(fd: int, body: bytes) -> None:
    """Write one frame; raises OSError (e.g. BrokenPipeError) if the other end is gone."""
    data = memoryview(len(body).to_bytes(_LENGTH_BYTES, "big") + body)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0.0))
            if not ready:
                raise EnvironmentFailure("the sandbox zygote did not answer in time")
        chunk = os.read(fd, min(size - len(chunks), 1 << 20))
        if not chunk:
            if chunks:
                raise EnvironmentFailure("the sandbox zygote closed its pipe mid-frame")
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(fd: int, limit: int, deadline: float | None = None) -> bytes | None:
    """Read one frame of at most `limit` bytes; None on a clean end of stream.

    Raises EnvironmentFailure on a timeout, a torn frame or an oversized length.
    """
    head = _read_exact(fd, _LENGTH_BYTES, deadline)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > limit:
        raise EnvironmentFailure(f"a sandbox frame of {size} bytes exceeds the limit of {limit}")
    body = _read_exact(fd, size, deadline)
    if body is None:
        raise EnvironmentFailure("the sandbox zygote closed its pipe mid-frame")
    return body
