"""Config composition: every file composes; bad names, keys and types fail first, clearly."""

from __future__ import annotations

import pytest

from pipeline.config import CONF_DIR, choices, compose, load_choice
from pipeline.errors import ConfigError
from pipeline.plan import load_plan
from pipeline.registry import APPS


@pytest.mark.parametrize("group", ["app", "agent", "model", "grid"])
def test_every_config_file_composes(group):
    names = choices(group)
    assert names, f"conf/{group}/ is empty"
    for name in names:
        # an app composes at the lowest level it defines (incidents starts at 6)
        low = []
        if group == "app":
            low = [f"level={min(APPS.get(str(load_choice('app', name).kind)).levels)}"]
        cfg = compose([f"{group}={name}", *low])
        assert cfg[group].name == name
        if group != "grid":
            assert load_choice(group, name).name == name


def test_every_config_key_is_commented():
    for path in CONF_DIR.rglob("*.yaml"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith(("#", "-")) or stripped.endswith(":"):
                continue
            assert "#" in line or (path.parent.name == "grid" and stripped.startswith("name:")), (
                f"{path.relative_to(CONF_DIR)}:{number} has no comment: {stripped}"
            )


def test_unknown_app_names_the_allowed_values():
    allowed = ", ".join(choices("app"))  # every file in conf/app/
    with pytest.raises(
        ConfigError,
        match=rf"unknown app 'mat' \(did you mean 'malt'\?\); choose one of: {allowed}$",
    ):
        compose(["app=mat"])


def test_unknown_agent_in_a_sweep_list():
    agents = ", ".join(choices("agent"))
    with pytest.raises(ConfigError, match=rf"unknown agent 'orcale'.*choose one of: {agents}"):
        compose(["agent=null,orcale"])


def test_wrong_type_names_the_key():
    with pytest.raises(ConfigError, match=r"level"):
        compose(["level=three"])


def test_out_of_range_level():
    with pytest.raises(ConfigError, match=r"level=0 is out of range"):
        compose(["level=0"])


def test_unknown_key_is_rejected():
    with pytest.raises(ConfigError, match=r"leval"):
        compose(["leval=2"])


def test_app_key_wrong_type_names_the_full_key():
    with pytest.raises(ConfigError, match=r"app\.sandbox\.memory_mb"):
        compose(["app.sandbox.memory_mb=lots"])


def test_unknown_app_key_names_the_full_key():
    with pytest.raises(ConfigError, match=r"app\.topologee"):
        compose(["+app.topologee=1"])


def test_grid_plan_cells():
    plan = load_plan("smoke")
    agents = {c.agent for c in plan.cells}
    assert agents == {"oracle", "null"}
    assert {c.model for c in plan.cells} == {"none"}
    assert {c.level for c in plan.cells} == {1, 2, 3}
    assert plan.queries_count("malt", "base", 1, 0) == plan.config["queries"]
    assert {c.variant for c in plan.cells} == {c.app_variant for c in plan.cells} == {"base"}


def test_unknown_grid():
    with pytest.raises(ConfigError, match=r"unknown grid 'smok'"):
        load_plan("smok")


def test_grid_exclude_leaves_cells_out():
    plan = load_plan("default")
    grid = plan.config
    left_out = {e["app"] for e in grid["exclude"] if e.get("agent") == "zero_shot"}
    assert left_out and set(grid["apps"]) - left_out
    assert not [c for c in plan.cells if c.app in left_out and c.agent == "zero_shot"]
    for app in set(grid["apps"]) - left_out:
        assert [c for c in plan.cells if c.app == app and c.agent == "zero_shot"]
    assert {c.app for c in plan.cells if c.agent == "oracle"} == set(grid["apps"])


def test_bad_exclude_entry_names_the_keys():
    with pytest.raises(ConfigError, match=r"exclude entry \{'agnt': 'x'\} must map some of"):
        compose(["grid=smoke", "grid.exclude=[{agnt: x}]"])
