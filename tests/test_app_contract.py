"""One contract over every registered app, as lm-evaluation-harness's tests/test_tasks.py
holds every task to one: a new app is tested by being registered, and nothing here names
an app. Each kind is checked through one of its configs (the one named like the kind, or
its first).

Fast: the spec, the configs at every declared level, the reply format (round trip, the
example and the few-shot replies pass its check), the capacity of every declared level.
Integration: one generated query of the lowest level carries the query id format (the lab
apps validate it on a live lab).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pipeline.api import Action, App, Capacity, ConfigError, Query, fenced_blocks, load_app
from pipeline.config import choices, compose, load_choice
from pipeline.core import diagnostics
from pipeline.registry import APPS, AppSpec
from tests.conftest import require_root

KINDS = APPS.names()
ID = re.compile(r"^(?P<app>[a-z0-9][a-z0-9_.-]*)-L(?P<level>\d+)-s(?P<seed>\d+)-(?P<index>\d{5})$")


def _config_of(kind: str) -> str:
    """The app config checked for `kind`: the one named like it, else its first."""
    configs = [name for name in choices("app") if load_choice("app", name).kind == kind]
    assert configs, f"app kind '{kind}' has no conf/app/*.yaml"
    return kind if kind in configs else configs[0]


@pytest.fixture(scope="module", params=KINDS)
def declared(request, tmp_path_factory) -> tuple[AppSpec, str, App]:
    """(spec, config name, the app as a cell makes it) of one registered kind."""
    kind = request.param
    name = _config_of(kind)
    data = tmp_path_factory.mktemp(f"contract-{kind}")
    lowest = min(APPS.get(kind).levels)  # an app need not define level 1 (incidents: 6-8)
    return APPS.get(kind), name, load_app(f"app={name}", f"level={lowest}", f"data_dir={data}")


def test_the_spec_declares_what_the_pipeline_must_know(declared):
    spec, _, app = declared
    assert isinstance(spec.version, str) and spec.version
    levels = spec.levels
    assert levels and list(levels) == sorted(set(levels)) and min(levels) >= 1
    assert all(isinstance(level, int) for level in levels)
    assert isinstance(app, spec.app_class())
    for bench in spec.benches:
        assert callable(bench.load()), bench.name


def test_every_declared_level_composes_and_no_other_does(declared):
    spec, name, _ = declared
    for level in spec.levels:
        assert compose([f"app={name}", f"level={level}"]).level == level
    beyond = max(spec.levels) + 1
    wording = (
        f"level={beyond} is not defined for app kind '{spec.kind}'; choose one of "
        + ", ".join(map(str, spec.levels))
    )
    with pytest.raises(ConfigError, match=re.escape(wording)):
        compose([f"app={name}", f"level={beyond}"])


def _arguments(action: Action, reply: str) -> dict[str, Any]:
    """The action's arguments a reply stands for: a reply is either the arguments as one
    JSON object, or its one required argument in a fenced block (code)."""
    try:
        value = json.loads(reply)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value
    required = action.parameters.get("required", [])
    assert len(required) == 1, f"{action.name}: a reply is neither JSON nor one fenced argument"
    blocks = [body for _, body in fenced_blocks(reply)]
    assert blocks, f"{action.name}: no fenced block in {reply!r}"
    return {required[0]: blocks[0].strip("\n")}


def test_the_reply_format_round_trips_and_its_replies_pass_its_check(declared):
    _, _, app = declared
    form = app.reply_format
    assert form.instructions and form.action.parameters.get("type") == "object"
    for action in (form.action, *diagnostics(form)):
        assert action.name and action.description
    replies = [form.example, *(reply for _, reply in app.few_shot)]
    assert app.few_shot, "an app ships few-shot (task, reply) pairs for LLM agents"
    for reply in replies:
        assert form.check(reply) is None, reply
        rendered = form.render(_arguments(form.action, reply))
        assert form.check(rendered) is None, rendered
        assert form.render(_arguments(form.action, rendered)) == rendered


def test_every_declared_level_has_a_capacity(declared):
    spec, _, app = declared
    for level in spec.levels:
        capacity = app.capacity(level)
        assert isinstance(capacity, Capacity), level
        if capacity.per_seed is not None:
            assert capacity.per_seed >= 1, (level, capacity.describe())
            assert capacity.total is None or capacity.total >= capacity.per_seed
        assert capacity.by_operation and all(isinstance(op, str) for op in capacity.by_operation)


@pytest.mark.integration
def test_a_generated_query_carries_the_id_format(declared):
    spec, name, app = declared
    require_root("the lab apps validate each query on a live lab")
    level, seed = min(spec.levels), 1
    (query,) = list(app.generate(level, seed, 1))
    assert isinstance(query, Query)
    found = ID.match(query.query_id)
    assert found, query.query_id
    assert found.groupdict() == {
        "app": name,
        "level": str(level),
        "seed": str(seed),
        "index": "00000",
    }
    assert (query.app, query.level, query.seed, query.index) == (name, level, seed, 0)
    assert query.key and query.operation and query.answer_type and query.prompt
    json.dumps(query.ground_truth)  # stored as JSON


def test_the_task_kinds_an_app_offers_are_backed(declared):
    """An app offering detect or localize has the task setting, a vocabulary at every level
    (lower-case ids, each with a meaning and a component form) and makes queries of the
    task it is set to (README "Task kinds")."""
    from pipeline.config import has_task
    from pipeline.diagnosis import TASKS, Vocabulary

    spec, name, app = declared
    assert "mitigate" in spec.tasks and set(spec.tasks) <= set(TASKS)
    if spec.tasks == ("mitigate",):
        return
    assert has_task(spec.config_class())
    for level in spec.levels:
        words = app.vocabulary(level)
        assert isinstance(words, Vocabulary) and all(
            w.meaning and w.component for w in words.labels
        )
    for task in spec.tasks:
        chosen = [f"app={name}", f"app.task={task}", f"level={min(spec.levels)}"]
        assert compose(chosen).app.task == task
