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
the whole reply from each of many starting points.

The stored copy of a reply past the bound is its first `max_chars` characters, followed by
a note with its full length and SHA-256, so a transcript never holds megabytes of junk.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import replace

from pipeline.core import Episode, StepResult, StepStatus

DEFAULT_MAX_REPLY_CHARS = 1 << 20  # >= every app's own limit (MALT code: 1 MiB of UTF-8)
_SURROGATE = re.compile("[\ud800-\udfff]")
_LANG = re.compile(r"[ \t]*([\w+-]*)")


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
