"""Reader for Google's MALT example topology in protobuf text format.

No .proto schema for the example is published, so `google.protobuf.text_format` (which
needs descriptors) cannot parse it; this module has a small schema-less tokenizer and
parser for the text format (fields, nested messages in `{}` or `<>`, `[...]` lists,
strings with C escapes, numbers, enum identifiers, `#` comments) and turns the parsed
`entity` / `relationship` messages into a MALT graph (conventions: generators/malt/schema.py).
Entities sharing a name collapse into one node; relationships between same-named
entities become one self-loop.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx

from generators.malt import schema as S
from pipeline.api import DataError

Message = dict[str, list[Any]]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*|\[[A-Za-z0-9_./]+\])
  | (?P<punct>[{}<>:\[\],;\-])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a"}
_ESCAPES.update({"b": "\b", "f": "\f", "v": "\v", "?": "?"})
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")
_CLOSE = {"{": "}", "<": ">"}


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        if esc[0] == "x":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        return _ESCAPES.get(esc, esc)

    return _ESCAPE_RE.sub(one, body)


def tokenize(text: str, source: str = "<text>") -> Iterator[tuple[str, Any, int]]:
    """Yield (kind, value, line) tokens; kind is "str", "num", "ident" or a punctuation char."""
    pos, line, end = 0, 1, len(text)
    match = _TOKEN.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            raise DataError(
                f"{source}:{line}: unexpected character {text[pos]!r} in protobuf text format"
            )
        kind = m.lastgroup
        raw = m.group()
        if kind == "space":
            line += raw.count("\n")
        elif kind == "str":
            yield "str", _unescape(raw[1:-1]), line
        elif kind == "num":
            yield "num", _number(raw), line
        elif kind == "ident":
            yield "ident", raw, line
        else:
            yield raw, raw, line
        pos = m.end()


def _number(raw: str) -> int | float:
    if re.fullmatch(r"[-+]?0[xX][0-9a-fA-F]+", raw):
        return int(raw, 16)
    body = raw.rstrip("fF")
    if re.fullmatch(r"[-+]?\d+", body):
        return int(body)
    return float(body)


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.tokens = list(tokenize(text, source))
        self.pos = 0
        self.source = source

    def _peek(self) -> tuple[str, Any, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, expected: str) -> DataError:
        tok = self._peek()
        got = "end of file" if tok is None else repr(tok[1])
        line = tok[2] if tok else (self.tokens[-1][2] if self.tokens else 1)
        return DataError(f"{self.source}:{line}: expected {expected}, got {got}")

    def _take(self, kind: str) -> tuple[str, Any, int]:
        tok = self._peek()
        if tok is None or tok[0] != kind:
            raise self._fail(repr(kind))
        self.pos += 1
        return tok

    def message(self, close: str | None) -> Message:
        msg: Message = {}
        while True:
            tok = self._peek()
            if tok is None:
                if close is not None:
                    raise self._fail(repr(close))
                return msg
            if close is not None and tok[0] == close:
                self.pos += 1
                return msg
            if tok[0] != "ident":
                raise self._fail("a field name")
            self.pos += 1
            field = tok[1]
            values = msg.setdefault(field, [])
            nxt = self._peek()
            if nxt is not None and nxt[0] == ":":
                self.pos += 1
                nxt = self._peek()
                if nxt is not None and nxt[0] == "[":
                    self.pos += 1
                    values.extend(self._list())
                else:
                    values.append(self._value())
            elif nxt is not None and nxt[0] in _CLOSE:
                self.pos += 1
                values.append(self.message(_CLOSE[nxt[0]]))
            else:
                raise self._fail(f"':' or '{{' after field {field!r}")
            sep = self._peek()
            if sep is not None and sep[0] in ",;":
                self.pos += 1

    def _list(self) -> list[Any]:
        items: list[Any] = []
        tok = self._peek()
        if tok is not None and tok[0] == "]":
            self.pos += 1
            return items
        while True:
            items.append(self._value())
            tok = self._peek()
            if tok is not None and tok[0] == ",":
                self.pos += 1
                continue
            self._take("]")
            return items

    def _value(self) -> Any:
        tok = self._peek()
        if tok is None:
            raise self._fail("a value")
        kind, value, _ = tok
        self.pos += 1
        if kind == "str":
            parts = [value]
            while (nxt := self._peek()) is not None and nxt[0] == "str":
                parts.append(nxt[1])  # adjacent string literals concatenate
                self.pos += 1
            return "".join(parts)
        if kind == "num":
            return value
        if kind == "-":  # "-inf", "- 5"
            nxt = self._peek()
            if nxt is not None and nxt[0] == "ident" and nxt[1].lower() in ("inf", "infinity"):
                self.pos += 1
                return float("-inf")
            return -self._take("num")[1]
        if kind == "ident":
            return {"true": True, "True": True, "false": False, "False": False}.get(value, value)
        if kind in _CLOSE:
            return self.message(_CLOSE[kind])
        self.pos -= 1
        raise self._fail("a value")


def parse_textproto(text: str, source: str = "<text>") -> Message:
    """Parse protobuf text format without a schema: each field maps to a list of values
    (scalars, enum names as str, or nested `Message` dicts)."""
    return _Parser(text, source).message(None)


def _one(msg: Message, field: str, where: str) -> Any:
    values = msg.get(field)
    if not values:
        raise DataError(f"{where}: missing field {field!r}")
    return values[-1]


def _entity_id(ident: Message, where: str) -> tuple[str, str]:
    kind = _one(ident, "kind", where)
    name = _one(ident, "name", where)
    if kind not in S.NODE_KINDS:
        raise DataError(f"{where}: unknown entity kind {kind!r}; expected one of {S.NODE_KINDS}")
    if not isinstance(name, str) or not name:
        raise DataError(f"{where}: entity name must be a non-empty string, got {name!r}")
    return kind, name


def build_graph(doc: Message, source: str = "<text>") -> nx.DiGraph:
    """The collapsed MALT graph of a parsed document with `entity` and `relationship` fields."""
    kinds: dict[str, set[str]] = {}
    extra: dict[str, dict[str, Any]] = {}
    for i, entity in enumerate(doc.get("entity", [])):
        where = f"{source}: entity #{i + 1}"
        kind, name = _entity_id(_one(entity, "id", where), where)
        kinds.setdefault(name, set()).add(kind)
        attrs = extra.setdefault(name, {})
        for port in entity.get("port_attr", []):
            cap = _one(port, "physical_capacity_bps", f"{where} ({name}) port_attr")
            attrs[S.A_CAPACITY] = int(cap)
        for switch in entity.get("packet_switch_attr", []):
            for loc in switch.get("switch_loc", []):
                attrs[S.A_SWITCH_LOC] = {k: v[-1] for k, v in sorted(loc.items())}
    edge_kinds: dict[tuple[str, str], set[str]] = {}
    for i, rel in enumerate(doc.get("relationship", [])):
        where = f"{source}: relationship #{i + 1}"
        rkind = _one(rel, "kind", where)
        if rkind not in S.EDGE_KINDS:
            raise DataError(
                f"{where}: unknown relationship kind {rkind!r}; expected one of {S.EDGE_KINDS}"
            )
        a_kind, a = _entity_id(_one(rel, "a", where), f"{where} end a")
        z_kind, z = _entity_id(_one(rel, "z", where), f"{where} end z")
        for end_kind, end in ((a_kind, a), (z_kind, z)):
            if end_kind not in kinds.get(end, ()):
                raise DataError(f"{where}: refers to {end_kind} {end!r}, which is not an entity")
        edge_kinds.setdefault((a, z), set()).add(rkind)
    graph = nx.DiGraph()
    for name in kinds:
        graph.add_node(name, **{S.A_NAME: name, S.A_TYPE: S.type_list(kinds[name])}, **extra[name])
    for (a, z), rkinds in edge_kinds.items():
        graph.add_edge(a, z, **{S.A_TYPE: sorted(rkinds)})
    return graph


def graph_from_bytes(content: bytes, source: str) -> nx.DiGraph:
    """The MALT graph of a text-proto document's bytes (UTF-8)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{source}: not UTF-8 text ({exc})") from exc
    return build_graph(parse_textproto(text, source), source)


def read_malt_textproto(path: Path) -> nx.DiGraph:
    """Read Google's MALT example (or any file of the same shape) into a MALT graph."""
    path = Path(path)
    try:
        content = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"MALT topology file not found: {path}") from exc
    except OSError as exc:
        raise DataError(f"cannot read MALT topology file {path}: {exc}") from exc
    return graph_from_bytes(content, str(path))
