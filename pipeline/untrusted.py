"""The one door every agent reply passes before an app sees it, and before a row stores it.

Replies come from models and external agents: they may be huge, binary, or hold code points
no file format can store (a lone surrogate from a JSON `"\\ud800"` escape). Two rules:

  - `step(episode, reply, max_chars)` bounds a reply's size BEFORE any app parses it: a
    reply past the bound (or not text at all) reaches the app as an empty reply, so the
    app's own turn and attempt bookkeeping stay as for any unusable reply, and the step
    it returns says why; nothing of it is parsed or run;
  - `storable(text)` makes any text writable to Parquet: lone surrogates are replaced by
    their escape (`\\udc80`), so the original stays readable and nothing is lost; NUL and
    other control characters are valid UTF-8 and kept as they are.

Apps read replies with scans linear in their length (`fenced_blocks` for ``` blocks, a
bounded number of JSON decodes), never with a regular expression that can backtrack over
the whole reply from each of many starting points. JSON in a reply is read with `JSON`,
which takes every number JSON allows: Python's `int()` refuses more than 4,300 digits
(a ValueError out of `json.loads`), so a longer integer is read as a float (inf past
1e308), as JavaScript and Go read it.

Text that goes on to a program (an argv, a command's stdin) must be text a program can
take: `argv_refusal` says why not, for a refusal before anything is spawned. What is read
back from programs is decoded with replacement wherever it is read, so no byte stored
in a process (the kernel, a daemon) can break a later read.

The stored copy of a reply past the bound is its first `max_chars` characters, followed by
a note with its full length and SHA-256, so a transcript never holds megabytes of junk.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pipeline.core import Episode, StepResult, StepStatus

DEFAULT_MAX_REPLY_CHARS = 1 << 20  # >= every app's own limit (MALT code: 1 MiB of UTF-8)
_SURROGATE = re.compile("[\ud800-\udfff]")
_LANG = re.compile(r"[ \t]*([\w+-]*)")


def _json_int(digits: str) -> int | float:
    try:
        return int(digits)
    except ValueError:  # past sys.get_int_max_str_digits()
        return float(digits)


JSON = json.JSONDecoder(parse_int=_json_int)  # .decode / .raw_decode; see the docstring
MAX_JSON_TRIES = 64  # places tried as the start of a JSON object: reading stays linear


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects in `text`, in order (an object's inner ones are its own): at most
    MAX_JSON_TRIES places are tried as the start of one, each decoded with `JSON`; text
    that is not JSON, or is nested past the parser's depth, is passed over."""
    pos = 0
    for _ in range(MAX_JSON_TRIES):
        start = text.find("{", pos)
        if start == -1:
            return
        try:
            value, end = JSON.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        yield value  # what decodes from a "{" is an object
        pos = end


def first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (see json_objects), None when there is none."""
    return next(json_objects(text), None)


def argv_refusal(text: str) -> str | None:
    """Why `text` cannot be handed to a program as an argument or input (None: it can).
    A lone surrogate is not Unicode text: spawning raises UnicodeEncodeError for most of
    them and writes a byte the agent never typed for \udc80-\udcff (surrogateescape); a
    NUL ends an argument in the kernel."""
    if "\0" in text:
        return f"it holds a NUL character (at character {text.index(chr(0))})"
    found = None if text.isascii() else _SURROGATE.search(text)
    if found:
        return (
            f"it holds a lone surrogate, \\u{ord(found.group()):04x} at character "
            f"{found.start()}, which is not Unicode text"
        )
    return None


def storable(text: str) -> str:
    """`text` with every lone surrogate written as its `\\uXXXX` escape (valid UTF-8)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def fenced_blocks(text: str) -> Iterator[tuple[str, str]]:
    """(language tag, body) of each ``` block, the last one possibly unclosed: what
    re.finditer(r"```[ \\t]*([\\w+-]*)[^\\n]*\\n(.*?)(?:```|\\Z)", text, re.S) finds.

    A scan rather than that expression: an opener's tag runs to the end of its line, and
    the expression looks for that end again from every opener (quadratic: "```" repeated
    to 1 MiB took minutes). Each character is looked at a bounded number of times."""
    pos = 0
    while (start := text.find("```", pos)) != -1:
        eol = text.find("\n", start + 3)
        if eol == -1:  # no line ends after this opener, so none after the later ones
            return
        tag = _LANG.match(text, start + 3, eol)
        end = text.find("```", eol + 1)
        yield (tag.group(1) if tag else ""), text[eol + 1 : None if end == -1 else end]
        if end == -1:
            return
        pos = end + 3


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def refusal(reply: object, max_chars: int = DEFAULT_MAX_REPLY_CHARS) -> str | None:
    """None when `reply` may go to the app; otherwise why it may not."""
    if not isinstance(reply, str):
        return f"the reply is a {type(reply).__name__}, not text; it was not parsed or run"
    if len(reply) > max_chars:
        return (
            f"the reply is {len(reply)} characters long; at most {max_chars} are read, "
            "so it was not parsed or run"
        )
    return None


def step(episode: Episode, reply: object, max_chars: int = DEFAULT_MAX_REPLY_CHARS) -> StepResult:
    """`episode.step(reply)`, or, for a reply `refusal` turns away, the app's step for an
    empty reply with the reason in place of its message."""
    why = refusal(reply, max_chars)
    if why is None:
        return episode.step(str(reply))  # refusal let it through: it is a str already
    result = episode.step("")
    status = result.status if result.status is not StepStatus.OK else StepStatus.PARSE_ERROR
    return replace(result, action="", status=status, output=why, error=why)


def stored_reply(reply: str, max_chars: int = DEFAULT_MAX_REPLY_CHARS) -> str:
    """What a transcript keeps of a reply: all of it, or its head and a note when too long."""
    if len(reply) <= max_chars:
        return storable(reply)
    note = f"\n[reply cut: {len(reply)} characters, sha256 {digest(reply)}]"
    return storable(reply[:max_chars]) + note
