"""Grammar-aware mutation of agent replies, seeded: the fuzzer's generator.

Each app's replies have a grammar: a JSON object {"machine", "command"} whose command is
the words of one network tool (routing, netllmbench; `vtysh -c LINE ...` on the routers of
routing levels 4-5), a JSON object {"command", "stdin"} holding a kubectl line and YAML
(k8s), a fenced Python block (malt). A mutation starts from a reply that parses (the
oracle's, the app's example, a diagnostic, a corpus command) and changes one to three
things at one layer of that grammar:

    value   a hostile value: an integer past 4,300 digits, NaN, 1e309, nesting 100 to
            200,000 deep, lone surrogates (raw and as JSON escapes), NUL and control
            bytes, huge and empty strings, a value of the wrong type
    json    the reply's JSON: a field replaced or dropped, keys added or duplicated,
            truncation, prose or fences around it, several objects, a bare array
    argv    the command's words: option spellings (abbreviations, --opt=value, clustered
            short options and their splits), comma lists, words replaced, injected,
            repeated, dropped or swapped, unbalanced quotes, `--`
    vtysh   the -c lines of a vtysh command: their words, bytes in descriptions, many
            lines, long lines, --command=LINE
    yaml    kubectl's stdin: anchors and aliases, tags, flow nesting, huge numbers,
            several documents, a List of objects
    code    malt's Python: odd return values (huge, nested, of any type), huge
            literals, deep nesting, bytes in the source, exceptions of every kind

`Mutator(seed)` is deterministic: the same seed and seed replies give the same replies.
"""

from __future__ import annotations

import json
import random
import re
import shlex
import sys
from collections.abc import Callable, Sequence

from pipeline.fuzz.corpus import (
    CODE_BODIES,
    FREE_TEXT,
    FRR_LINES,
    HOSTILE_TEXT,
    JSON_NUMBERS,
    WORD_NUMBERS,
    YAML_BOMB,
    YAML_TAGS,
)

NESTING = (100, 1000, 5000, 200_000)  # depths of nested arrays and objects
HUGE = (1 << 10, 1 << 16, 1 << 20)  # lengths of huge strings


def json_string(text: str, escape: bool) -> str:
    """`text` as a JSON string literal; `escape` writes every non-ASCII character (lone
    surrogates included) as a \\u escape, else they stay raw in the reply."""
    if escape:
        return json.dumps(text, ensure_ascii=True)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def obj(**members: str) -> str:
    """A JSON object whose members' values are already JSON text (hostile or not)."""
    return "{" + ", ".join(f'"{k}": {v}' for k, v in members.items()) + "}"


def near_limit(rng: random.Random) -> int:
    """A depth just under the interpreter's recursion limit: JSON that one parser takes and
    the next reader, a few frames deeper, cannot."""
    return sys.getrecursionlimit() - rng.randint(2, 80)


def nested(depth: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


class Mutator:
    """Seeded mutations (see the module docstring); one instance per run."""

    def __init__(self, seed: int | str) -> None:
        self.rng = random.Random(seed)

    # -- values -----------------------------------------------------------------------

    def text(self) -> str:
        """A hostile piece of text (a Python str; may hold lone surrogates)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            return rng.choice("ax\x00\ud800") * rng.choice(HUGE)
        if roll < 0.2:
            return rng.choice(WORD_NUMBERS)
        return rng.choice(HOSTILE_TEXT)

    def json_value(self) -> str:
        """A hostile JSON value, as text (so it may be what json.dumps never writes)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            return rng.choice(JSON_NUMBERS)
        if roll < 0.45:
            return nested(rng.choice([*NESTING, near_limit(rng)]), rng)
        if roll < 0.55:
            return rng.choice(["null", "true", "[]", "{}", '[""]', '{"": null}', "[1,2,3]"])
        return json_string(self.text(), escape=rng.random() < 0.5)

    def inject(self, word: str) -> str:
        """`word` with hostile text put inside it (or in its place)."""
        rng = self.rng
        bad = self.text()
        where = rng.randrange(len(word) + 1) if word else 0
        roll = rng.random()
        if roll < 0.2:
            return bad
        return word[:where] + bad + word[where:]

    # -- JSON replies -----------------------------------------------------------------

    def json_reply(self, fields: dict[str, str]) -> str:
        """A mutated JSON object of `fields` (string values), as reply text."""
        rng = self.rng
        items = [
            (json_string(k, False), json_string(v, rng.random() < 0.3)) for k, v in fields.items()
        ]
        for _ in range(rng.randint(1, 3)):
            roll = rng.random()
            if roll < 0.35 and items:
                i = rng.randrange(len(items))
                items[i] = (items[i][0], self.json_value())
            elif roll < 0.5 and items:
                items.pop(rng.randrange(len(items)))
            elif roll < 0.65:
                items.insert(
                    rng.randrange(len(items) + 1),
                    (json_string(self.text(), True), self.json_value()),
                )
            elif roll < 0.8 and items:
                items.append((rng.choice(items)[0], self.json_value()))  # a duplicate key
            else:
                items.append(
                    (json_string(rng.choice(["n", "x", "id", "stdin"]), False), self.json_value())
                )
        body = "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
        return self.wrap(body)

    def wrap(self, body: str) -> str:
        """Reply text around a JSON body: prose, fences, truncation, several objects."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            return body
        if roll < 0.6:
            return f"```json\n{body}\n```"
        if roll < 0.7:
            return f"Here is my command:\n{body}\nThat should fix it {self.text()}"
        if roll < 0.78:
            return body[: rng.randrange(len(body) + 1)]
        if roll < 0.85:
            return f"[{body}]"
        if roll < 0.92:
            return "{" * rng.randint(1, 70) + body
        return f"{body}\n{body}"

    # -- command words ----------------------------------------------------------------

    def argv(self, command: str) -> str:
        """`command` with one to three of its words mutated (see `WORD_OPS`)."""
        rng = self.rng
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if words and words[0].rsplit("/", 1)[-1] == "vtysh" and rng.random() < 0.6:
            words = self.vtysh(words)
        else:
            for _ in range(rng.randint(1, 3)):
                op = rng.choice(WORD_OPS)
                words = op(self, words) or words
        return self.join(words)

    def join(self, words: list[str]) -> str:
        roll = self.rng.random()
        if roll < 0.7:
            return shlex.join(words)
        if roll < 0.9:
            return " ".join(words)
        return shlex.join(words) + self.rng.choice(["'", '"', "\\", " '", " #", "\n"])

    def abbreviate(self, words: list[str]) -> list[str] | None:
        longs = [i for i, w in enumerate(words) if w.startswith("--") and len(w) > 4]
        if not longs:
            return None
        i = self.rng.choice(longs)
        name = words[i].split("=", 1)[0]
        words[i] = name[: self.rng.randint(3, len(name))] + words[i][len(name) :]
        return words

    def equals(self, words: list[str]) -> list[str] | None:
        options = [i for i, w in enumerate(words[:-1]) if w.startswith("-") and "=" not in w]
        if not options:
            return None
        i = self.rng.choice(options)
        joint = "=" if words[i].startswith("--") or self.rng.random() < 0.3 else ""
        return [*words[:i], words[i] + joint + words[i + 1], *words[i + 2 :]]

    def cluster(self, words: list[str]) -> list[str] | None:
        shorts = [
            i
            for i, w in enumerate(words[:-1])
            if re.fullmatch(r"-[A-Za-z0-9]+", w) and re.fullmatch(r"-[A-Za-z0-9]+", words[i + 1])
        ]
        if shorts:
            i = self.rng.choice(shorts)
            return [*words[:i], words[i] + words[i + 1][1:], *words[i + 2 :]]
        clustered = [i for i, w in enumerate(words) if re.fullmatch(r"-[A-Za-z0-9]{2,}", w)]
        if not clustered:
            return None
        i = self.rng.choice(clustered)
        return [*words[:i], *(f"-{c}" for c in words[i][1:]), *words[i + 1 :]]

    def comma_list(self, words: list[str]) -> list[str] | None:
        values = [i for i, w in enumerate(words) if re.fullmatch(r"[0-9./:a-f]+", w)]
        if not values:
            return None
        i = self.rng.choice(values)
        count = self.rng.choice([2, 3, 17, 60, 400])
        words[i] = ",".join(
            [words[i]] * count
            if self.rng.random() < 0.5
            else [f"10.{k // 250}.{k % 250}.1" for k in range(count)]
        )
        return words

    def replace(self, words: list[str]) -> list[str] | None:
        if len(words) < 2:
            return None
        i = self.rng.randrange(1, len(words))
        words[i] = self.text() if self.rng.random() < 0.5 else self.rng.choice(WORD_NUMBERS)
        return words

    def inject_word(self, words: list[str]) -> list[str] | None:
        if not words:
            return None
        i = self.rng.randrange(len(words))
        words[i] = self.inject(words[i])
        return words

    def text_value(self, words: list[str]) -> list[str] | None:
        """Hostile text in a value the tool takes as free text (a comment, a match string,
        a description), else in any value word: a command that still parses."""
        free = [i + 1 for i, w in enumerate(words[:-1]) if w.lstrip("-") in FREE_TEXT]
        values = [i for i, w in enumerate(words) if i and not w.startswith("-")]
        if not (free or values):
            return None
        i = self.rng.choice(free or values)
        bad = self.rng.choice(["\ud800", "\udcff", "\x00", "\x01\x1b", "\udfff\ud800", "\u2028"])
        words[i] = words[i] + bad
        return words

    def repeat(self, words: list[str]) -> list[str] | None:
        if len(words) < 2:
            return None
        i = self.rng.randrange(1, len(words))
        return [*words[: i + 1], *words[i : i + 2] * self.rng.choice([1, 2, 30]), *words[i + 1 :]]

    def drop(self, words: list[str]) -> list[str] | None:
        if len(words) < 2:
            return None
        words.pop(self.rng.randrange(1, len(words)))
        return words

    def swap(self, words: list[str]) -> list[str] | None:
        if len(words) < 3:
            return None
        i, j = self.rng.sample(range(1, len(words)), 2)
        words[i], words[j] = words[j], words[i]
        return words

    def option(self, words: list[str]) -> list[str] | None:
        extra = self.rng.choice(
            ["--", "-", "--bogus", "-Z", "--help", "-h", "--version", "-V", "-4", "-6",
             "-json", "--batch", "-b", "-f", "/etc/passwd", "-n", "--netns=x", "-w", "-x"]
        )  # fmt: skip
        words.insert(self.rng.randrange(1, len(words) + 1) if words else 0, extra)
        return words

    # -- vtysh ------------------------------------------------------------------------

    def vtysh(self, words: list[str]) -> list[str]:
        """Mutate the -c lines of a vtysh command (their words), or how they are given."""
        rng = self.rng
        lines = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-c", "--command")]
        lines = lines or ["show running-config"]
        roll = rng.random()
        if roll < 0.5:
            i = rng.randrange(len(lines))
            parts = lines[i].split()
            for _ in range(rng.randint(1, 2)):
                op = rng.choice((self.replace, self.inject_word, self.repeat, self.drop))
                parts = op(parts) or parts
            lines[i] = " ".join(parts)
        elif roll < 0.65:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(FRR_LINES) + " " + self.text())
        elif roll < 0.75:
            lines = lines * rng.choice([2, 11, 40])
        elif roll < 0.85:
            lines.append("x" * rng.choice([299, 300, 301, 5000]))
        elif roll < 0.92:
            i = rng.randrange(len(lines))
            lines[i] = " ".join(self.text_value(lines[i].split()) or [lines[i]])
        else:
            lines = [self.inject(line) for line in lines]
        out = ["vtysh"]
        for line in lines:
            spelling = rng.random()
            if spelling < 0.7:
                out += ["-c", line]
            elif spelling < 0.8:
                out.append(f"--command={line}")
            elif spelling < 0.9:
                out.append(f"-c{line}")
            else:
                out += [rng.choice(["--comm", "--c", "-Ec", "-nc", "-d", "-dc"]), line]
        return out

    # -- YAML -------------------------------------------------------------------------

    def yaml(self, text: str) -> str:
        """kubectl's stdin mutated: a scalar replaced, or hostile YAML around it."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.4 and text:
            scalars = list(re.finditer(r"(?<=: )[^\n{}\[\]]+", text))
            if scalars:
                m = rng.choice(scalars)
                value = rng.choice([*JSON_NUMBERS, json_string(self.text(), True)])
                return text[: m.start()] + value + text[m.end() :]
        if roll < 0.55:
            return YAML_BOMB
        if roll < 0.65:
            return "a: " + nested(rng.choice(NESTING), rng) + "\n"
        if roll < 0.75:
            return rng.choice(YAML_TAGS) + "\n" + text
        if roll < 0.85:
            return "---\n".join([text] * rng.choice([2, 50]))
        if roll < 0.92:
            items = "".join(f"- {line}\n" for line in text.splitlines()[:1]) * rng.choice([3, 60])
            return f"apiVersion: v1\nkind: List\nitems:\n{items}"
        return self.inject(text)

    # -- Python -----------------------------------------------------------------------

    def code(self, source: str) -> str:
        """malt's code mutated: a hostile body or return value, or bytes in the source."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.55:
            body = rng.choice(CODE_BODIES)
            return f"def process_graph(graph):\n{body}\n"
        if roll < 0.7:
            return self.inject(source)
        if roll < 0.8:
            depth = rng.choice(NESTING[:3])
            return f"def process_graph(graph):\n    return {'(' * depth}1{')' * depth}\n"
        if roll < 0.9:
            return f"def process_graph(graph):\n    return {'1' * rng.choice([4301, 100_000])}\n"
        return source.replace("\n", rng.choice(["\r", "\n\t", "\x0c\n", "\n" + " " * 3]), 3)


WordOp = Callable[[Mutator, list[str]], "list[str] | None"]
WORD_OPS: Sequence[WordOp] = (
    Mutator.abbreviate, Mutator.equals, Mutator.cluster, Mutator.comma_list, Mutator.replace,
    Mutator.inject_word, Mutator.text_value, Mutator.repeat, Mutator.drop, Mutator.swap,
    Mutator.option,
)  # fmt: skip
