"""The logs of NetGauge's Inspect task (pipeline/inspect_task.py) into the tables:

    inspect eval pipeline/inspect_task.py@netgauge -T app=malt --model ...
    python -m analysis import-inspect logs/*.eval

Each sample's `netgauge` score holds, in its metadata, the rows NetGauge's scorer wrote
for the episode: `episode`, `steps`, `calls` and its `cell`. They are written into the data
directory's `episodes`, `steps`, `calls` and `cells` shards, one cell per (app, Inspect
model, agent, level, seed, queries, variant), exactly as the scorer judged them.

A log is a file from outside (a colleague's run, a submission to a leaderboard), so it is
read as untrusted input, and a log that breaks a rule below is refused whole with a
DataError naming the file, the sample and the rule; nothing of it is written:
  - it is an Inspect log; epoch e of a sample is the repeated trial e - 1 of its cell
    (`_as_trial`: for e > 1 the variant a grid's `trial=e-1` of the cell has, `trial_of`
    the first epoch's, so pass@k, the report and the leaderboard pool them; unlike a
    grid's trial, an epoch is sampled by Inspect's provider, not with a seed NetGauge
    derives from model.seed);
  - every sample holds a NetGauge verdict: a dict of those four parts, rows as dicts,
    the cell row's `differences` a JSON object;
  - the cell's names are names (letters, digits, `_.+-`, not starting with a dot: they
    become folders of the data directory, so `..` or `/` could write anywhere) and its
    numbers are integers in their columns' ranges;
  - the rows are one episode's: the sample's id is the episode's query id, every step and
    call row carries that query id and the episode's cell, the cell row is that cell's and
    the same for every sample of it, and no query is played twice in one cell;
  - the verdict reads one way: the outcome is one NetGauge writes, `correct` holds exactly
    when it is "correct", the score is in [0, 1], and the score's values Inspect shows are
    the episode's (a log whose metadata was edited after scoring disagrees with them);
  - every row converts to its table's schema.
An import never replaces what NetGauge played: a cell whose shards already exist is
replaced only when they were themselves imported (`netgauge.source` in their metadata),
so importing a log again is idempotent and importing into a played grid's cell is refused.
What cannot be checked without replaying: that the agent's turns happened as the rows say.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
from inspect_ai.log import EvalSample, read_eval_log

from pipeline.cells import Cell, Layout, data_root
from pipeline.core import Outcome, canonical_json
from pipeline.errors import DataError
from pipeline.records import RESULTS, shard_metadata, to_table, write_shard
from pipeline.trials import TRIAL_KEY
from pipeline.variants import label_of, name_of

SCORER = "netgauge"
PARTS = ("episode", "steps", "calls", "cell")
NAMES = ("app", "model", "agent", "variant")
NUMBERS = {"level": 2**15 - 1, "seed": 2**63 - 1, "queries": 2**31 - 1}
NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,199}")
VALUES = ("correct", "safe", "score")
SOURCE = "netgauge.source"  # shard metadata: who wrote it; "inspect-import" here
IMPORTED = "inspect-import"
OUTCOMES = frozenset(str(o) for o in Outcome)
WRITE_ORDER = ("cells", "calls", "steps", "episodes")  # the score stage's order


def import_inspect(logs: Iterable[str | Path], data_dir: str | Path) -> list[Cell]:
    """Write the episodes of `logs` into the data directory (see the module docstring);
    return the cells written. Every log is checked before anything is written."""
    cells: dict[Cell, dict[str, list[dict[str, Any]]]] = {}
    for location in logs:
        for sample in _samples(location):
            where = f"{location}: sample {sample.id}"
            records = _records(sample, where)
            _cell(records["episode"], where)  # names checked before a trial's are derived
            records = _as_trial(records, sample.epoch, where)
            episode = records["episode"]
            cell = _cell(episode, where)
            _check_rows(records, cell, str(sample.id), where)
            _check_verdict(episode, sample, where)
            tables = cells.setdefault(cell, {table: [] for table in RESULTS})
            if any(e["query_id"] == episode["query_id"] for e in tables["episodes"]):
                raise DataError(
                    f"{where}: query {episode['query_id']} is played twice in {cell.part}"
                )
            if tables["cells"] and tables["cells"][0] != records["cell"]:
                raise DataError(
                    f"{where}: its cell row differs from another sample's of {cell.part}"
                )
            tables["episodes"].append(episode)
            tables["steps"] += records["steps"]
            tables["calls"] += records["calls"]
            tables["cells"][:] = [records["cell"]]
    layout = Layout(data_root(data_dir))
    shards = {cell: _tables(cell, tables) for cell, tables in cells.items()}
    for cell in shards:
        _check_replaceable(layout, cell)
    for cell, converted in shards.items():
        digest = str(cells[cell]["episodes"][0]["config_hash"])
        for table in WRITE_ORDER:
            data, path = converted[table], getattr(layout, table)(cell)
            write_shard(table, data, path, config_hash=digest, extra={SOURCE: IMPORTED})
    return list(shards)


def _samples(location: str | Path) -> list[EvalSample]:
    try:
        log = read_eval_log(str(location))
    except FileNotFoundError as err:
        raise DataError(f"{location}: no such log file") from err
    except Exception as err:  # inspect_ai's reader raises what its format parser raises
        raise DataError(f"{location}: not an Inspect log ({type(err).__name__}: {err})") from err
    return list(log.samples or [])


def _records(sample: EvalSample, where: str) -> dict[str, Any]:
    score = (sample.scores or {}).get(SCORER)
    records = score.metadata if score is not None else None
    if not isinstance(records, dict) or "episode" not in records:
        why = sample.error.message.splitlines()[0] if sample.error else "no netgauge score"
        raise DataError(
            f"{where} holds no NetGauge verdict ({why}); only logs of "
            "pipeline/inspect_task.py whose samples all finished import"
        )
    for part in PARTS:
        value = records.get(part)
        rows = value if isinstance(value, list) else [value]
        if (not rows and part in ("episode", "cell")) or not all(isinstance(r, dict) for r in rows):
            raise DataError(f"{where}: its verdict's {part!r} is not {_shape(part)}")
    return records


def _as_trial(records: dict[str, Any], epoch: int, where: str) -> dict[str, Any]:
    """Epoch e's rows as NetGauge's trial t = e - 1: for t > 0 the variant of its own that
    a grid's trial t is (the cell's differences plus `trial=t`), `trial` t and `trial_of`
    the variant of trial 0, so pass@k, pass^k and the leaderboard group the epochs as they
    group trials. Unlike a grid's trial, an epoch is sampled by Inspect's provider with
    no seed NetGauge derives (pipeline/trials.py): replaying it is Inspect's business."""
    trial = epoch - 1
    if trial <= 0:
        return records
    try:
        differences = json.loads(records["cell"].get("differences") or "{}")
    except (TypeError, ValueError, RecursionError) as err:
        raise DataError(f"{where}: its cell row's differences are not JSON ({err})") from err
    if not isinstance(differences, dict):
        raise DataError(f"{where}: its cell row's differences are not a JSON object")
    differences[TRIAL_KEY] = trial
    first, variant = records["episode"].get("variant"), name_of(differences)
    cell = records["cell"] | {
        "variant": variant,
        "variant_label": label_of(differences),
        "differences": canonical_json(differences),
    }
    return {
        "episode": records["episode"] | {"variant": variant, "trial": trial, "trial_of": first},
        "steps": [row | {"variant": variant} for row in records["steps"]],
        "calls": [row | {"variant": variant} for row in records["calls"]],
        "cell": cell,
    }


def _shape(part: str) -> str:
    return "a row (an object)" if part in ("episode", "cell") else "a list of rows (objects)"


def _cell(episode: dict[str, Any], where: str) -> Cell:
    for key in (*NAMES, "app_variant"):
        value = episode.get(key)
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise DataError(f"{where}: its {key} {value!r} is not a name (letters, digits, _.+-)")
    for key, high in NUMBERS.items():
        value = episode.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
            raise DataError(f"{where}: its {key} {value!r} is not an integer in [0, {high}]")
    return Cell(
        episode["app"],
        episode["model"],
        episode["agent"],
        episode["level"],
        episode["seed"],
        episode["queries"],
        episode["variant"],
        app_variant=episode["app_variant"],
    )


def _check_rows(records: dict[str, Any], cell: Cell, sample_id: str, where: str) -> None:
    episode = records["episode"]
    if episode.get("query_id") != sample_id:
        raise DataError(f"{where}: its episode is of query {episode.get('query_id')!r}")
    columns = cell.columns()
    for part in ("steps", "calls"):
        for row in records[part]:
            if row.get("query_id") != sample_id or any(row.get(k) != v for k, v in columns.items()):
                raise DataError(f"{where}: a row of its {part} belongs to another episode or cell")
    row = records["cell"]
    if (
        any(row.get(k) != v for k, v in columns.items())
        or row.get("app_variant") != cell.app_variant
    ):
        raise DataError(f"{where}: its cell row is not the episode's cell")


def _check_verdict(episode: dict[str, Any], sample: EvalSample, where: str) -> None:
    outcome, correct, score = episode.get("outcome"), episode.get("correct"), episode.get("score")
    if outcome not in OUTCOMES:
        raise DataError(f"{where}: its outcome {outcome!r} is not one NetGauge writes")
    if not isinstance(correct, bool) or correct != (outcome == Outcome.CORRECT):
        raise DataError(f"{where}: correct={correct!r} contradicts its outcome {outcome!r}")
    if not isinstance(episode.get("safe"), bool):
        raise DataError(f"{where}: safe={episode.get('safe')!r} is not a boolean")
    if not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 1:
        raise DataError(f"{where}: its score {score!r} is not a number in [0, 1]")
    shown = sample.scores[SCORER].value if sample.scores else None
    expected = {k: float(episode[k]) for k in VALUES}
    if not isinstance(shown, dict) or set(shown) != set(VALUES) or not all(
        isinstance(shown[k], int | float) and math.isclose(shown[k], v, abs_tol=1e-9)
        for k, v in expected.items()
    ):  # fmt: skip
        raise DataError(
            f"{where}: the score Inspect shows ({shown!r}) is not the episode's {expected}"
        )


def _tables(cell: Cell, tables: dict[str, list[dict[str, Any]]]) -> dict[str, pa.Table]:
    """Every table of `cell` converted before any is written (a bad row writes nothing)."""
    out = {}
    for table in RESULTS:
        try:
            out[table] = to_table(table, tables[table])
        except (DataError, pa.ArrowException, TypeError, ValueError, OverflowError) as err:
            raise DataError(f"{cell.part}: its {table} rows do not fit the schema: {err}") from err
    return out


def _check_replaceable(layout: Layout, cell: Cell) -> None:
    for table in RESULTS:
        path = getattr(layout, table)(cell)
        if path.exists() and _source(path) != IMPORTED:
            raise DataError(
                f"{cell.part} already holds episodes NetGauge played ({path}); an import "
                "never replaces them: import into another data directory"
            )


def _source(path: Path) -> str | None:
    try:
        return shard_metadata(path).get(SOURCE)
    except (OSError, pa.ArrowException):  # unreadable: not known to be an import
        return None
