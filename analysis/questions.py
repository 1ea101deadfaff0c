"""The SQL files of `analysis/sql/`: one question each, run over the result views.

Each file starts with a header of `--` comments the loader reads:

    -- question: Per cell: correctness and safety counts, mean turns, latency, tokens.
    -- requires: episodes(app, model, agent, level, correct, safe)
    -- params: app, agent_a
    -- empty: the two agents share no query of this app

`requires` lists the views and columns the query reads (one line per view). When one is
missing (e.g. no LLM agent has written a `calls` table yet), `ask` raises `MissingData`
with the reason instead of a DuckDB binder error, so callers such as the report can show
"no data yet" for that question and carry on. `params` are DuckDB named parameters
(`$app`), passed as a dict. Files that read a relation the caller registers (not a
result view) name it under `requires` too. `empty` says why the question can come back
with no rows (or with counts `n` of 0) when the data is there (`ask`'s command line
prints it instead of an empty table; the default: no episode matches the parameters and
the grid).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from pipeline.cells import Cell
from pipeline.errors import ConfigError, DataError
from pipeline.views import columns

SQL_DIR = Path(__file__).with_name("sql")
_REQUIRES = re.compile(r"^(?P<table>[a-z_][a-z0-9_]*)\s*(?:\((?P<cols>[^)]*)\))?$")


class MissingData(DataError):
    """A question needs a view or column the data directory does not have (yet)."""


@dataclass(frozen=True)
class Question:
    name: str
    text: str  # the one-line question
    sql: str
    requires: dict[str, tuple[str, ...]]
    params: tuple[str, ...]
    empty: str = ""  # why it can come back empty, as its file says (see the docstring)

    @property
    def why_empty(self) -> str:
        return self.empty or "no episode matches the parameters and the grid"


@functools.cache
def question(name: str) -> Question:
    """The question in `analysis/sql/<name>.sql`."""
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise ConfigError(f"no SQL question '{name}'; choose one of: {', '.join(names())}")
    sql = path.read_text()
    text, requires, params, empty = "", {}, (), ""
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        key, _, value = line[2:].strip().partition(":")
        value = value.strip()
        if key == "question":
            text = value
        elif key == "requires":
            match = _REQUIRES.match(value)
            if match is None:
                raise ConfigError(f"{path}: bad 'requires' line {value!r}; expected table(col, …)")
            cols = tuple(c.strip() for c in (match["cols"] or "").split(",") if c.strip())
            requires[match["table"]] = cols
        elif key == "params":
            params = tuple(p.strip() for p in value.split(",") if p.strip())
        elif key == "empty":
            empty = value
    if not text:
        raise ConfigError(f"{path} has no '-- question:' header line")
    return Question(name, text, sql, requires, params, empty)


def names() -> list[str]:
    return sorted(p.stem for p in SQL_DIR.glob("*.sql"))


def missing(con: duckdb.DuckDBPyConnection, q: Question) -> str | None:
    """Why `q` cannot run on `con` (a missing view or column), or None if it can."""
    for table, needed in q.requires.items():
        have = columns(con, table)
        if not have:
            return f"no '{table}' table yet"
        lacking = [c for c in needed if c not in have]
        if lacking:
            return f"'{table}' has no column(s) {', '.join(lacking)} yet"
    return None


def ask(
    con: duckdb.DuckDBPyConnection,
    name: str,
    params: dict[str, Any] | None = None,
    **fmt: str,
) -> pd.DataFrame:
    """Run question `name` and return its result; `fmt` fills `{placeholders}` in the SQL."""
    q = question(name)
    reason = missing(con, q)
    if reason is not None:
        raise MissingData(f"{name}: {reason}")
    given = dict(params or {})
    unknown = set(given) - set(q.params)
    absent = set(q.params) - set(given)
    if unknown or absent:
        missing_text = ", ".join(sorted(absent)) or "-"
        unknown_text = ", ".join(sorted(unknown)) or "-"
        raise ConfigError(
            f"{name} takes the parameters ({', '.join(q.params) or 'none'}); "
            f"missing: {missing_text}, unknown: {unknown_text}"
        )
    sql = q.sql.format(**{"where": "TRUE", **fmt})
    return con.execute(sql, given or None).df()


def ask_or_none(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, **fmt: str
) -> tuple[pd.DataFrame | None, str | None]:
    """(result, None), or (None, the reason) when the data for `name` is not there yet."""
    try:
        return ask(con, name, params, **fmt), None
    except MissingData as err:
        return None, str(err)


def cell_filter(cells: Iterable[Cell] | None) -> str:
    """A SQL condition selecting the episodes of `cells` (all episodes, if None)."""
    if cells is None:
        return "TRUE"
    keys = sorted({(c.app, c.model, c.agent, c.level, c.seed, c.queries, c.variant) for c in cells})
    if not keys:
        return "FALSE"
    values = ", ".join("(" + ", ".join(_literal(v) for v in key) + ")" for key in keys)
    return f"(app, model, agent, level, seed, queries, variant) IN ({values})"


def _literal(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"
