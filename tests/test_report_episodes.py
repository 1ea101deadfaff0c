"""The report's episode pages (analysis/report/episodes.py): hostile text stays text, huge
text is cut with a note, every table row links to its episodes, and headless Chromium
renders a page without running anything in it."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from analysis.report import build_report
from analysis.report.data import collect
from analysis.report.episodes import FIELD_LIMIT, cell_slug, write_episode_pages
from analysis.report.page import render
from analysis.synthetic import task_rows, write_episodes, write_task_episodes
from pipeline.cells import Cell, Layout, data_root
from pipeline.records import to_table, write_shard
from pipeline.untrusted import storable
from pipeline.views import connect
from tests.conftest import require

# A reply and an observation an agent or a device could send: markup that would run
# script, close a textarea or an attribute, and a NUL and a lone surrogate.
HOSTILE_REPLY = (
    '<script>document.body.setAttribute("data-pwned","reply")</script></textarea>'
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">\"'&amp;"
)
HOSTILE_OUTPUT = "</pre><script>window.pwned=1</script>\x00 \ud800 done"
HUGE = FIELD_LIMIT * 8
FIGURES = ("intervals", "query_count", "levels", "operations", "capability", "outcomes")
FIGURES += ("iterations", "tokens_per_s")


class _Elements(HTMLParser):
    """Counts the elements a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def _hostile_cell(data_dir: Path) -> Cell:
    """A two-query LLM cell whose first turn replies HOSTILE_REPLY and reads a huge output
    ending in HOSTILE_OUTPUT; a reference cell of another app beside it."""
    cell = Cell("netllmbench", "m1", "react", 1, 0, 2)
    rows = task_rows(cell, 0.9, np.random.default_rng(1), tasks=("set_ip", "ping"))
    first = rows["steps"][0]
    first["reply"] = HOSTILE_REPLY
    first["output"] = "x" * HUGE + HOSTILE_OUTPUT
    layout = Layout(data_root(data_dir))
    for table, path in (
        ("episodes", layout.episodes(cell)),
        ("steps", layout.steps(cell)),
        ("calls", layout.calls(cell)),
    ):
        write_shard(table, to_table(table, rows[table]), path, config_hash="synthetic")
    write_episodes(data_dir, {("none", "oracle"): 1.0}, app="malt", levels=(1,), queries=3)
    return cell


def _first_page(root: Path, cell: Cell) -> Path:
    key = (cell.app, cell.model, cell.agent, cell.level, cell.queries, cell.variant, "mitigate")
    return root / "episodes" / cell_slug(key) / "netllmbench-L1-s0-00000.html"


def test_hostile_text_renders_as_text_and_huge_text_is_cut(tmp_path):
    cell = _hostile_cell(tmp_path)
    written = write_episode_pages(connect(tmp_path), None, tmp_path / "out")
    assert (written.cells, written.episodes) == (2, 5)
    page = _first_page(tmp_path / "out", cell).read_text(encoding="utf-8")
    parsed = _Elements()
    parsed.feed(page)
    assert "script" not in parsed.tags and "textarea" not in parsed.tags
    assert "img" not in parsed.tags and "onerror" not in parsed.attrs
    text = "".join(parsed.text)
    assert HOSTILE_REPLY in text  # every character shown, as text
    assert "</pre><script>window.pwned=1</script>" not in page
    # The huge observation: its first FIELD_LIMIT characters and a note saying what was cut.
    assert text.count("x" * FIELD_LIMIT) == 1 and "x" * (FIELD_LIMIT + 1) not in text
    stored = HUGE + len(storable(HOSTILE_OUTPUT))  # the surrogate is stored escaped
    assert f"cut: {stored - FIELD_LIMIT:,} of {stored:,} characters not shown" in text
    assert len(page) < 3 * FIELD_LIMIT + 20_000
    # Nothing else is lost: the other turns, the verdict and the episode's figures.
    assert len(re.findall(r'<section class="turn', page)) >= 2
    assert 'id="verdict"' in page and "correct:" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    listing = (_first_page(tmp_path / "out", cell).parent / "index.html").read_text()
    assert listing.count('href="netllmbench-L1-s0-0000') == 2


def test_report_links_every_cell_and_agent_to_episodes(tmp_path):
    _hostile_cell(tmp_path)
    index = build_report(tmp_path, study_reps=10, progress=False)
    page = index.read_text()
    hrefs = set(re.findall(r'href="(episodes/[^"#]+)"', page))
    assert len(hrefs) == 2  # one per cell row
    for href in hrefs:
        listing = index.parent / href
        assert listing.exists()
        for episode in re.findall(r'href="([^"]+\.html)"', listing.read_text()):
            if not episode.startswith(".."):
                assert (listing.parent / episode).exists()
    anchors = set(re.findall(r'href="episodes/index.html#(who-[^"]+)"', page))
    assert len(anchors) == 2  # leaderboard rows: oracle, react · m1
    who = (index.parent / "episodes" / "index.html").read_text()
    assert all(f'id="{a}"' in who for a in anchors)


def test_episode_pages_are_fast_to_write(tmp_path):
    """Thousands of episodes of ~10 turns each, with their calls: pages per second on this
    machine (printed)."""
    write_task_episodes(tmp_path, {("m1", "react"): 0.6, ("none", "oracle"): 1.0}, queries=1000)
    con = connect(tmp_path)
    started = time.perf_counter()
    written = write_episode_pages(con, None, tmp_path / "out")
    took = time.perf_counter() - started
    assert written.episodes == 2 * 1000
    print(f"{written.episodes} pages in {took:.2f} s: {written.episodes / took:.0f} pages/s")
    assert written.episodes / took > 200


@pytest.fixture
def chromium(tmp_path):
    exe = shutil.which("chromium")
    require(exe is not None, "Debian's chromium is missing (scripts/setup.d/40-report.sh)")

    def run(url: str, *args: str) -> subprocess.CompletedProcess:
        profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
        return subprocess.run(
            [
                str(exe),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                *args,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def test_episode_page_in_headless_chromium(tmp_path, chromium):
    cell = _hostile_cell(tmp_path / "data")
    index = build_report(tmp_path / "data", study_reps=10, progress=False)
    page = _first_page(index.parent, cell)
    dom = chromium(page.as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = dom.stdout
    assert "data-pwned" not in body.split("<body", 1)[1].split(">", 1)[0]
    assert "<script" not in body and "<textarea" not in body and "<img" not in body
    assert "&lt;script&gt;document.body.setAttribute" in body  # shown, as text
    assert "outcome: <b>" in body and 'id="verdict"' in body
    # The index as rendered: its per-cell rows link to the lists the episode page sits in.
    dom = chromium(index.as_uri(), "--dump-dom", "--virtual-time-budget=10000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f'href="episodes/{page.parent.name}/index.html"' in dom.stdout
    assert re.search(r'data-images-loaded="(\d+)/\1"', dom.stdout)  # its script ran
    shot = tmp_path / "episode.png"
    done = chromium(page.as_uri(), "--window-size=1280,1600", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]


def test_a_grids_report_lists_the_data_directorys_other_cells(tmp_path):
    """Cells outside the grid (a direct run, an MCP agent) appear in their own table, with a
    model column and links to their episodes, and stay out of the grid's statistics."""
    grid = write_episodes(tmp_path, {("none", "oracle"): 1.0}, app="malt", levels=(1,), queries=5)
    write_episodes(tmp_path, {("m1", "mcp"): 0.5}, app="malt", levels=(1, 2), queries=5)
    data = collect(connect(tmp_path), grid, study_reps=10, progress=False)
    assert list(data.cells["agent"]) == ["oracle"]
    other = data.other_cells
    assert other is not None
    assert other[["model", "agent", "level"]].values.tolist() == [
        ["m1", "mcp", 1],
        ["m1", "mcp", 2],
    ]
    page = render(data, {name: Path(f"{name}.png") for name in FIGURES}, {})
    section = page.split('id="other-cells"', 1)[1].split("<h2", 1)[0]
    assert section.count("<td>m1</td>") == 2 and section.count('href="episodes/') == 2
    assert collect(connect(tmp_path), None, study_reps=10, progress=False).other_cells is None
