"""Model responses cached on disk, keyed by what can change them (opt-in: `model.cache`).

One entry per distinct request to one model: its key is the sha256 of the canonical JSON
of {"model": the model config's result settings, "request": the request body as sent},
so the messages, tools, tool_choice, response_format and every sampling parameter
(temperature, max_tokens and the sampling seed) are in it; a request with another seed
is another entry, never served across seeds. Operational settings (venv, headers,
requests in flight, pricing, the cache switch itself) and the cell's cost limit cannot
change a reply and are left out (pipeline/llm/models.cache_settings).

Entries are `<cache>/responses/<key[:2]>/<key>.json` (`Layout.cache`, shared by data
directories through `$NETGAUGE_CACHE_DIR`), written whole (pipeline/files.py: a
temporary file renamed into place), so processes writing one entry at once all succeed
and a reader sees one whole version. An entry that cannot be read, is not JSON, holds
another key or a wrong field is a miss, never an error: the request goes to the model
and its reply replaces the entry. A cache that cannot be written (a full disk, a folder
of someone else's) is a warning: the reply is used, only not kept.

A shared cache folder is trusted as far as whoever can write into it (an entry IS the
reply a cell replays), but nothing planted there can stall or flood a cell: an entry is
opened without following a symbolic link and without blocking (a FIFO would hang a plain
read), and is read only if it is a regular file of at most MAX_ENTRY_BYTES; anything else
is a miss, and the reply that follows replaces it (the rename replaces a link, never
writes through it).

A hit returns the reply as first received, with its measurements (latency, time to first
token, tokens per second, the server's cached prompt tokens) as measured then, so a rerun
reproduces the rows it replays; `ChatResult.cache` says which it was, and a hit's
`calls.cost_usd` is 0 (pipeline/pricing.py: its tokens were not paid again).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import stat
from pathlib import Path
from typing import Any

from pipeline.core import canonical_json
from pipeline.files import write_whole
from pipeline.serving.client import HIT, ChatResult, ToolCall

FORMAT = 1  # of an entry's JSON; another format is a miss
MAX_ENTRY_BYTES = 64 << 20  # a reply's entry is kilobytes; a larger file is no entry of ours
log = logging.getLogger(__name__)
_FIELDS = {f.name for f in dataclasses.fields(ChatResult)}


class ResponseCache:
    """The cache of one model: `key(body)`, `get(key)`, `put(key, result)`."""

    def __init__(self, root: Path, model_settings: dict[str, Any]) -> None:
        self.root = Path(root)
        self._model = model_settings

    def key(self, body: dict[str, Any]) -> str:
        text = canonical_json({"model": self._model, "request": body})
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / "responses" / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResult | None:
        """The cached reply, or None (absent, unreadable, truncated or not ours)."""
        try:
            entry = json.loads(_read_entry(self.path(key)))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
            return None
        return _result(entry.get("result"))

    def put(self, key: str, result: ChatResult) -> None:
        """Keep `result` under `key`; a cache that cannot be written is a warning (the
        reply is not lost, the next run asks again)."""
        plain = dataclasses.asdict(dataclasses.replace(result, cache=None))
        entry = {"format": FORMAT, "key": key, "result": plain}
        try:  # ASCII: a lone surrogate a model's tool call carried is kept as its escape
            write_whole(self.path(key), json.dumps(entry))
        except OSError as err:
            log.warning("response cache %s: cannot write an entry (%s)", self.root, err)


def _read_entry(path: Path) -> bytes:
    """The bytes of the regular file at `path` (see the module docstring); OSError for a
    link, FIFO, device, folder or a file over MAX_ENTRY_BYTES."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path}: not a cache entry (mode {info.st_mode:o}, {info.st_size} B)")
        data = handle.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:  # grew after the fstat
        raise OSError(f"{path}: over {MAX_ENTRY_BYTES} bytes")
    return data


def _result(value: Any) -> ChatResult | None:
    """A ChatResult from an entry's "result", if every field has the type it must have."""
    if not isinstance(value, dict) or set(value) != _FIELDS:
        return None
    counts, seconds = (
        ("prompt_tokens", "completion_tokens"),
        ("latency_s", "ttft_s", "tokens_per_s"),
    )
    if not all(_number(value[k], int) for k in counts):
        return None
    if value["cached_tokens"] is not None and not _number(value["cached_tokens"], int):
        return None
    if not all(_number(value[k], int | float) for k in seconds):
        return None
    if not isinstance(value["text"], str) or not isinstance(value["model"], str):
        return None
    if value["finish_reason"] is not None and not isinstance(value["finish_reason"], str):
        return None
    calls = value["tool_calls"]
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str)
        and isinstance(c.get("arguments"), str) and len(c) == 2
        for c in calls
    ):  # fmt: skip
        return None
    tools = tuple(ToolCall(c["name"], c["arguments"]) for c in calls)
    return ChatResult(**{**value, "tool_calls": tools, "cache": HIT})


def _number(value: Any, kind: Any) -> bool:
    """A count or measurement: of `kind`, not a boolean, finite and not negative (JSON's
    NaN and Infinity parse, and would poison every mean they enter)."""
    return (
        isinstance(value, kind)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
