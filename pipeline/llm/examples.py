"""Worked examples for an LLM agent: none, the first few, or the nearest to the task.

The library is the app's own `few_shot` pairs, plus, when the agent config names one,
an SFT export (`python -m analysis.export sft`, JSONL of oracle trajectories from the
train split, so an example is never an evaluated query): each record's first user turn
and first assistant reply. `nearest` ranks them by the cosine similarity of TF-IDF
vectors of word tokens (computed here, no model to download) between the example's task
and the episode's first observation; ties keep library order.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import ConfigError

Pair = tuple[str, str]
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]*|\d+")
MAX_LIBRARY = 5_000  # examples read from a library file


def library(few_shot: Sequence[Pair], path: str | None) -> list[Pair]:
    """The app's pairs, then those of the SFT export at `path` (if any)."""
    pairs = list(few_shot)
    if path is None:
        return pairs
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"agent.library: no such file {path}; expected an SFT export (JSONL)")
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if len(pairs) >= len(few_shot) + MAX_LIBRARY:
                break
            try:
                messages = json.loads(line)["messages"]
                task = next(m["content"] for m in messages if m["role"] == "user")
                reply = next(m["content"] for m in messages if m["role"] == "assistant")
            except (ValueError, KeyError, TypeError, StopIteration) as err:
                raise ConfigError(
                    f"agent.library {path}, line {number}: not an SFT record with a user and "
                    f"an assistant message ({type(err).__name__})"
                ) from None
            pairs.append((task, reply))
    return pairs


def choose(kind: str, pairs: Sequence[Pair], task: str, shots: int) -> list[Pair]:
    """The examples `kind` (none, fixed, nearest) shows for `task`."""
    if kind == "none" or not pairs:
        return []
    if kind == "fixed":
        return list(pairs[:shots])
    return Nearest(pairs).top(task, shots)


class Nearest:
    """TF-IDF cosine similarity over a library's tasks."""

    def __init__(self, pairs: Sequence[Pair]) -> None:
        self.pairs = list(pairs)
        docs = [Counter(_tokens(task)) for task, _ in self.pairs]
        frequency = Counter(word for doc in docs for word in doc)
        n = len(docs)
        self.idf = {word: math.log((1 + n) / (1 + df)) + 1 for word, df in frequency.items()}
        self.vectors = [self._vector(doc) for doc in docs]

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        vec = {w: c * self.idf.get(w, math.log(1 + len(self.pairs)) + 1) for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {w: v / norm for w, v in vec.items()}

    def top(self, task: str, k: int) -> list[Pair]:
        query = self._vector(Counter(_tokens(task)))
        scores = [sum(query.get(w, 0.0) * v for w, v in vec.items()) for vec in self.vectors]
        order = sorted(range(len(self.pairs)), key=lambda i: (-scores[i], i))
        return [self.pairs[i] for i in order[:k]]


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _WORD.findall(text[:20_000])]
