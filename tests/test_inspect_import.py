"""`python -m analysis import-inspect` against hostile logs: a log may come from someone
else's run, so each rule of analysis/inspect_import.py is broken here once, on the rows
of a real episode (the MALT oracle's, played by pipeline.run), written with inspect_ai's
own writer; a broken log is refused whole, with the rule named, and writes nothing."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.scorer import Score

from analysis.__main__ import main
from analysis.inspect_import import import_inspect
from pipeline.cells import Cell, Layout, data_root
from pipeline.config import compose
from pipeline.errors import DataError
from pipeline.records import RESULTS
from pipeline.run import run_cell

CELL = Cell("malt", "none", "oracle", 1, 0, 2)
Records = list[dict[str, Any]]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Records]:
    """A played cell's data directory, and its episodes' verdicts as the Inspect task's
    scorer puts them in a score's metadata."""
    data = tmp_path_factory.mktemp("played") / "data"
    run_cell(compose(["app=malt", "agent=oracle", "model=none", "queries=2", f"data_dir={data}"]))
    layout = Layout(data_root(data))
    rows = {t: pq.read_table(getattr(layout, t)(CELL)).to_pylist() for t in RESULTS}
    assert len(rows["episodes"]) == 2 and all(e["correct"] for e in rows["episodes"])
    verdicts = [
        {
            "episode": e,
            "steps": [s for s in rows["steps"] if s["query_id"] == e["query_id"]],
            "calls": [c for c in rows["calls"] if c["query_id"] == e["query_id"]],
            "cell": rows["cells"][0],
        }
        for e in rows["episodes"]
    ]
    return data, verdicts


def write_log(path: Path, verdicts: Records, ids: list[str] | None = None) -> Path:
    samples = []
    for i, records in enumerate(verdicts):
        episode = records.get("episode") if isinstance(records.get("episode"), dict) else {}
        shown = {k: float(bool(episode.get(k))) for k in ("correct", "safe")}
        shown["score"] = float(episode.get("score") or 0)
        sample_id = ids[i] if ids else str(episode.get("query_id", i))
        score = Score(value=shown, metadata=records)
        samples.append(
            EvalSample(id=sample_id, epoch=1, input="q", target="t", scores={"netgauge": score})
        )
    spec = EvalSpec(
        created="2026-11-28T00:00:00+00:00",
        task="netgauge_malt",
        dataset=EvalDataset(),
        model="openai/x",
        config=EvalConfig(),
    )
    write_eval_log(EvalLog(eval=spec, samples=samples), str(path))
    return path


def test_a_real_episodes_rows_come_back_as_they_were(played, tmp_path) -> None:
    data, verdicts = played
    log = write_log(tmp_path / "good.eval", verdicts)
    into = tmp_path / "into"
    assert import_inspect([log], into) == [CELL]
    source, copy_ = Layout(data_root(data)), Layout(data_root(into))
    for table in RESULTS:
        assert (
            pq.read_table(getattr(copy_, table)(CELL)).to_pylist()
            == pq.read_table(getattr(source, table)(CELL)).to_pylist()
        )
    assert import_inspect([log], into) == [CELL]  # its own import is replaced: idempotent


def _set(path: str, value: Any) -> Callable[[Records], None]:
    """Set `part.key` (or `part.0.key` for a row of a list) of the first verdict."""

    def edit(verdicts: Records) -> None:
        target: Any = verdicts[0]
        *parents, key = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(key) if key.isdigit() else key] = value

    return edit


def _everywhere(key: str, value: Any) -> Callable[[Records], None]:
    """Set the cell column `key` in every row of every verdict (a consistent forgery)."""

    def edit(verdicts: Records) -> None:
        for records in verdicts:
            for row in [records["episode"], records["cell"], *records["steps"], *records["calls"]]:
                row[key] = value

    return edit


def _drop(key: str) -> Callable[[Records], None]:
    def edit(verdicts: Records) -> None:
        del verdicts[0]["episode"][key]

    return edit


def _forged(verdicts: Records) -> None:
    verdicts[0]["episode"].update(outcome="wrong")


HOSTILE = {
    "app climbs out": (_everywhere("app", "x/../../../../escaped"), "is not a name"),
    "model is a dot-dot": (_everywhere("model", ".."), "is not a name"),
    "variant holds a slash": (_everywhere("variant", "a/b"), "is not a name"),
    "level is text": (_everywhere("level", "one"), "not an integer"),
    "level is a boolean": (_everywhere("level", True), "not an integer"),
    "seed overflows int64": (_everywhere("seed", 2**70), "not an integer"),
    "queries is negative": (_everywhere("queries", -1), "not an integer"),
    "episode is text": (_set("episode", "x"), "'episode' is not a row"),
    "steps is text": (_set("steps", "nope"), "'steps' is not a list"),
    "a call row is text": (_set("calls", ["x"]), "'calls' is not a list"),
    "cell is a list": (_set("cell", []), "'cell' is not a row"),
    "query id missing": (_set("episode.query_id", None), "its episode is of query None"),
    "a step of another query": (_set("steps.0.query_id", "q-other"), "another episode or cell"),
    "a step of another app": (_set("steps.0.app", "k8s"), "another episode or cell"),
    "the cell row of another seed": (_set("cell.seed", 9), "cell row is not the episode's"),
    "wrong but correct": (_forged, "contradicts its outcome"),
    "an outcome never written": (_set("episode.outcome", "pwned"), "not one NetGauge writes"),
    "safe is text": (_set("episode.safe", "yes"), "is not a boolean"),
    "score above one": (_set("episode.score", 7.0), "not a number in [0, 1]"),
    "a column of the wrong type": (_set("episode.iterations", "many"), "do not fit the schema"),
    "a column missing": (_drop("iterations"), "lack columns: iterations"),
    "a step row emptied": (_set("steps.0", {}), "another episode or cell"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_log_is_refused_whole_and_writes_nothing(name, played, tmp_path) -> None:
    _, verdicts = played
    edit, message = HOSTILE[name]
    hostile = copy.deepcopy(verdicts)
    edit(hostile)
    log = write_log(tmp_path / "hostile.eval", hostile)
    into = tmp_path / "deep" / "er" / "into"
    with pytest.raises(DataError, match=re.escape(message)):
        import_inspect([log], into)
    assert not (tmp_path / "escaped").exists() and not any(tmp_path.rglob("*.parquet"))


def test_a_score_edited_after_scoring_is_refused(played, tmp_path) -> None:
    """Inspect shows the score's values; the rows imported are its metadata: a log whose
    values say correct while the rows say wrong (or the reverse) was edited."""
    _, verdicts = played
    edited = copy.deepcopy(verdicts)
    edited[0]["episode"].update(outcome="wrong", correct=False, score=0.0)
    log = write_log(tmp_path / "edited.eval", edited)
    shown = tmp_path / "shown.eval"
    read = read_eval_log(str(log))
    read.samples[0].scores["netgauge"].value = {"correct": 1.0, "safe": 1.0, "score": 1.0}
    write_eval_log(read, str(shown))
    with pytest.raises(DataError, match="the score Inspect shows"):
        import_inspect([shown], tmp_path / "into")
    mismatched = write_log(tmp_path / "ids.eval", verdicts, ids=["q-a", "q-b"])
    with pytest.raises(DataError, match="its episode is of query"):
        import_inspect([mismatched], tmp_path / "into")


def test_a_query_in_two_logs_of_one_cell_is_refused(played, tmp_path) -> None:
    _, verdicts = played
    first = write_log(tmp_path / "a.eval", verdicts)
    second = write_log(tmp_path / "b.eval", verdicts[:1])
    query = verdicts[0]["episode"]["query_id"]
    with pytest.raises(DataError, match=f"b.eval: sample {query}: query {query} is played twice"):
        import_inspect([first, second], tmp_path / "into")
    assert not any(tmp_path.rglob("*.parquet"))


def test_a_played_cell_is_never_replaced_by_an_import(played, tmp_path, capsys) -> None:
    data, verdicts = played
    log = write_log(tmp_path / "good.eval", verdicts)
    episodes = Layout(data_root(data)).episodes(CELL)
    before = episodes.read_bytes()
    assert main(["--data-dir", str(data), "import-inspect", str(log)]) == 2
    assert "already holds episodes NetGauge played" in capsys.readouterr().err
    assert episodes.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\x00\xffPK not a zip", "not an Inspect log"), (None, "no such log file")],
)
def test_a_file_that_is_no_log_is_a_one_line_error(content, message, tmp_path, capsys) -> None:
    path = tmp_path / "x.eval"
    if content is not None:
        path.write_bytes(content)
    assert main(["--data-dir", str(tmp_path / "d"), "import-inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
