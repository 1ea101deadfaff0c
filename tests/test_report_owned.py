"""A report written again over a data directory whose episodes changed removes the pages of
the last report that it no longer writes, and nothing else (analysis/report/owned.py): not
a user's file, not anything outside the report folder, whatever its manifest says."""

from __future__ import annotations

import json
import shutil

from analysis.report import build_report
from analysis.report.owned import MANIFEST, prune
from analysis.synthetic import write_episodes
from pipeline.cells import Layout, data_root


def _pages(report):
    return {p.relative_to(report).as_posix() for p in (report / "episodes").rglob("*.html")}


def test_a_regenerated_report_drops_the_pages_of_episodes_gone_from_the_data(tmp_path):
    data = tmp_path / "data"
    cells = write_episodes(data, {("none", "oracle"): 1.0, ("none", "null"): 0.0}, levels=(1,))
    cells = [c for c in cells if c.agent == "null"]
    index = build_report(data, study_reps=10, progress=False)
    report = index.parent
    before = _pages(report)
    null_pages = {p for p in before if "_null_" in p}
    assert len(null_pages) == 101  # 100 episodes and the cell's list
    mine = [report / "notes.txt", report / "episodes" / "my.html"]
    folder = report / next(iter(null_pages)).rpartition("/")[0]
    mine.append(folder / "kept.txt")  # a user's file in the folder of a cell that goes
    for path in mine:
        path.write_text("a user's")
    stale_table = report / "tables" / "old.csv"  # listed by an earlier report, not written now
    stale_table.write_text("x")
    listed = json.loads((report / MANIFEST).read_text())
    (report / MANIFEST).write_text(
        json.dumps({**listed, "files": listed["files"] + ["tables/old.csv"]})
    )
    for cell in cells:  # the null agent's episodes leave the data directory
        shutil.rmtree(Layout(data_root(data)).episodes(cell).parent)
    build_report(data, study_reps=10, progress=False)
    after = _pages(report)
    assert after == (before - null_pages) | {"episodes/my.html"}
    assert all(path.read_text() == "a user's" for path in mine)
    assert not stale_table.exists()
    assert "_null_" not in (report / "episodes" / "index.html").read_text()
    listed = json.loads((report / MANIFEST).read_text())["files"]
    assert "index.html" in listed and not any("_null_" in f for f in listed)
    # The emptied cell folder of a page-only cell is removed; one with a user's file stays.
    shutil.rmtree(data / "results" / "episodes")
    build_report(data, study_reps=10, progress=False)
    assert _pages(report) == {"episodes/my.html", "episodes/index.html"}
    assert [p.name for p in (report / "episodes").iterdir() if p.is_dir()] == [folder.name]


def test_a_forged_manifest_reaches_nothing_outside_the_report(tmp_path):
    report, outside = tmp_path / "report", tmp_path / "outside"
    (report / "episodes").mkdir(parents=True)
    outside.mkdir()
    victim = outside / "x.html"
    victim.write_text("not the report's")
    (report / "episodes" / "link").symlink_to(outside)  # a planted folder link
    (report / "mine.html").write_text("a user's")
    forged = [
        "../outside/x.html",
        "episodes/../../outside/x.html",
        str(victim),
        "episodes/link/x.html",
        "mine.html",  # not under a folder the report writes
        "episodes/./x.html",
        "episodes/a/b/c/x.html",
    ]
    (report / MANIFEST).write_text(json.dumps({"version": 1, "files": forged}))
    page = report / "episodes" / "index.html"
    page.write_text("now")
    assert prune(report, [page]) == []
    assert victim.read_text() == "not the report's"
    assert (report / "mine.html").exists() and (report / "episodes" / "link").is_symlink()
    assert json.loads((report / MANIFEST).read_text())["files"] == ["episodes/index.html"]
    # A manifest that is no JSON list, or a link, removes nothing.
    for bad in ("[1, 2]", "{", json.dumps({"files": "episodes/index.html"})):
        (report / MANIFEST).write_text(bad)
        assert prune(report, []) == [] and page.exists()
    (report / MANIFEST).unlink()
    (report / MANIFEST).symlink_to(outside / "m.json")
    (outside / "m.json").write_text(json.dumps({"files": ["episodes/index.html"]}))
    assert prune(report, []) == [] and page.exists()
    assert json.loads((outside / "m.json").read_text()) == {"files": ["episodes/index.html"]}
    assert not (report / MANIFEST).is_symlink()  # replaced by the report's own list
