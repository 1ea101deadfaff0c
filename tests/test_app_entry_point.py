"""Plugins the ecosystem's way: an app pip-installed as a real package, found by its
`netgauge.apps` entry point, runs through `pipeline.run`, the Snakemake DAG and Gymnasium
with no project file changed; and a broken plugin (a package on $NETGAUGE_APP_PATH that
fails to import, an entry point that names nothing) is reported by name while every other
app keeps working.

The package is the toy app of test_app_plugin.py under another kind (`toyep`), its config
and a grid shipped inside it (`toyep/conf/`), built with the project's setuptools without
the network and installed with `pip install --target` into a folder put on PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config import ROOT
from pipeline.registry import APP_PATH_ENV, APPS
from tests.conftest import SLOTS, SNAKEMAKE
from tests.test_app_plugin import TOY_APP, TOY_CONFIG, TOY_GRID, TOY_INIT

TOYNET = ROOT / "tests" / "plugins"  # toynet: the task kinds' pretend network

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "netgauge-toyep"
version = "1.0"

[project.entry-points."netgauge.apps"]
toyep = "toyep:APP"
missing = "toyep.nowhere:APP"

[tool.setuptools]
packages = ["toyep"]

[tool.setuptools.package-data]
toyep = ["conf/app/*.yaml", "conf/grid/*.yaml"]
"""

INIT = '''
"""Toy (installed): say the number the query names."""

from pipeline.api import AppSpec

APP = AppSpec(
    kind="toyep", app=".app:ToyApp", config=".app:ToyConfig", version="1", levels=(1, 2)
)
'''


def _rename(text: str) -> str:
    return text.replace('"toy"', '"toyep"').replace("toy/", "toyep/").replace("toy ", "toyep ")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The folder the toy package was pip-installed into (--target)."""
    src = tmp_path_factory.mktemp("toyep-src")
    package = src / "toyep"
    (package / "conf" / "app").mkdir(parents=True)
    (package / "conf" / "grid").mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text(INIT)
    (package / "app.py").write_text(_rename(TOY_APP))
    config = _rename(TOY_CONFIG).replace("name: toy ", "name: toyep")
    (package / "conf" / "app" / "toyep.yaml").write_text(config)
    grid = TOY_GRID.replace("toygrid", "toyepgrid").replace("[toy]", "[toyep]")
    (package / "conf" / "grid" / "toyepgrid.yaml").write_text(grid)
    target = tmp_path_factory.mktemp("toyep-site")
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--no-index", "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "toyep" / "conf" / "app" / "toyep.yaml").is_file()
    return target


def _env(*path: Path, app_path: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, path)])}
    env.pop(APP_PATH_ENV, None)
    if app_path is not None:
        env[APP_PATH_ENV] = app_path
    return env


def test_the_installed_app_runs_through_pipeline_run(installed: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "pipeline.run", "app=toyep", "agent=oracle", "level=2"]
    done = subprocess.run(
        [*argv, "queries=4", f"data_dir={data}"],
        cwd=ROOT, env=_env(installed), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    part = "app=toyep/model=none/agent=oracle/level=2/seed=0/queries=4/variant=base"
    assert f"{part}: n=4 correct=100.0%" in done.stdout
    queries = data / "results/queries/app=toyep/app_variant=base/level=2/seed=0/part-0.parquet"
    assert pq.read_table(queries).to_pydict()["query_id"][0] == "toyep-L2-s0-00000"
    # The entry point that names nothing is reported by name; it stops nothing.
    assert "entry point 'missing = toyep.nowhere:APP'" in done.stderr
    assert "netgauge-toyep" in done.stderr


def test_the_installed_app_is_a_gymnasium_environment(installed: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import gymnasium as gym
        import pipeline.gym
        env = gym.make("NetGauge/Toyep-v0", levels=[1], queries=2, data_dir={str(tmp_path)!r})
        observation, info = env.reset(seed=0)
        number = observation.split("Say ")[1].rstrip(".")
        observation, reward, terminated, truncated, info = env.step(number)
        print(reward, terminated)
        env.close()
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env=_env(installed), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1.0", "True"]


@pytest.mark.integration
def test_both_ways_of_adding_an_app_run_through_the_dag(installed: Path, tmp_path: Path) -> None:
    """One sweep (summary and report included) of the installed toy app, of
    test_app_plugin.py's toy app on $NETGAUGE_APP_PATH, by a grid of that folder's, and of
    tests/plugins' toynet under a `tasks:` axis: each task kind its own variant, scored
    and reported on its own, the toys' tasks other than mitigate left out by exclude
    entries (one sweep for all: a sweep costs about a minute here)."""
    plugins = tmp_path / "plugins"
    (plugins / "toy").mkdir(parents=True)
    (plugins / "toy" / "__init__.py").write_text(TOY_INIT)
    (plugins / "toy" / "app.py").write_text(TOY_APP)
    (plugins / "conf" / "app").mkdir(parents=True)
    (plugins / "conf" / "app" / "toy.yaml").write_text(TOY_CONFIG)
    (plugins / "conf" / "grid").mkdir(parents=True)
    grid = TOY_GRID.replace("toygrid", "toys").replace("[toy]", "[toy, toyep, toynet]")
    grid += "tasks: [mitigate, detect, localize]\nexclude:\n  - {app: toynet, level: 2}\n"
    grid += "".join(
        f"  - {{app: {app}, task: {task}}}\n"
        for app in ("toy", "toyep")
        for task in ("detect", "localize")
    )
    (plugins / "conf" / "grid" / "toys.yaml").write_text(grid)
    data = tmp_path / "data"
    app_path = os.pathsep.join([str(plugins), str(TOYNET)])
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "sweep", "--config", "grid=toys", f"data_dir={data}"],
        cwd=ROOT, env=_env(installed, app_path=app_path), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    for app in ("toy", "toyep"):
        for level in (1, 2):
            for agent, correct in (("oracle", 4), ("null", 0)):
                cell = f"app={app}/model=none/agent={agent}/level={level}/seed=0/queries=4"
                path = data / "results" / "episodes" / cell / "variant=base" / "part-0.parquet"
                assert sum(pq.read_table(path).to_pydict()["correct"]) == correct, cell
    found = {}
    for path in (data / "results" / "episodes" / "app=toynet").glob("**/part-0.parquet"):
        rows = pq.read_table(path, partitioning=None).to_pylist()
        key = (rows[0]["agent"], rows[0]["level"], rows[0]["task"])
        found[key] = (len(rows), sum(r["correct"] for r in rows), sum(r["score"] for r in rows))
    for task in ("mitigate", "detect", "localize"):
        assert found.pop(("oracle", 1, task)) == (4, 4, 4.0)
        assert found.pop(("null", 1, task)) == (4, 0, 0.0)
    assert not found
    summary = (data / "summaries" / "toys.md").read_text()
    assert " task " in summary and "localize" in summary and " score " in summary
    page = (data / "report" / "index.html").read_text()
    assert "<h2>Task kinds</h2>" in page and "balanced_accuracy" in page
    assert (data / "report" / "tables" / "localization.csv").is_file()


def test_a_broken_package_on_the_app_path_leaves_the_other_apps_working(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    (plugins / "broken").mkdir(parents=True)
    (plugins / "broken" / "__init__.py").write_text("import a_module_nobody_installed\n")
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "pipeline.run", "app=malt", "agent=oracle", "queries=2"]
    done = subprocess.run(
        [*argv, f"data_dir={data}"],
        cwd=ROOT, env=_env(app_path=str(plugins)), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "app=malt/model=none/agent=oracle/level=1/seed=0/queries=2/variant=base: n=2" in (
        done.stdout
    )
    assert f"NetGauge left out {plugins / 'broken'}: it failed to import: " in done.stderr
    assert "ModuleNotFoundError: No module named 'a_module_nobody_installed'" in done.stderr


def test_a_config_whose_package_is_broken_says_why(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    (plugins / "half").mkdir(parents=True)
    (plugins / "half" / "__init__.py").write_text("raise RuntimeError('half-written')\n")
    (plugins / "conf" / "app").mkdir(parents=True)
    (plugins / "conf" / "app" / "half.yaml").write_text("name: half\nkind: half\n")
    argv = [sys.executable, "-m", "pipeline.run", "app=half", f"data_dir={tmp_path / 'data'}"]
    done = subprocess.run(
        argv, cwd=ROOT, env=_env(app_path=str(plugins)), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    kinds = ", ".join(APPS.names())  # the project's own, whatever they are
    assert (
        f"unknown app kind 'half'; choose one of: {kinds}; left out: "
        f"{plugins / 'half'} (it failed to import: RuntimeError: half-written)"
    ) in done.stderr
