"""The app API: everything an app (`generators/<kind>/`, or a plugin's package) may import
from pipeline/. Nothing else in pipeline/ is an app's to import (`make lint` checks it
with import-linter, and type-checks this module with mypy).

What an app is made of:

- its declaration: `APP = AppSpec(kind, app, config, version, levels, benches)` in its
  package's `__init__.py` (`BenchSpec` per benchmark);
- its App class (the `App` protocol) and what it trades in: `Query`, `StepResult` and
  `StepStatus`, `Verdict` with `Outcome` and `TaskStep`, `Action` for its reply format;
  `Capacity` (and `cached`, a capacity kept on disk);
- its query draws: `query_id`, `query_rng`, `healthy_query`, `query_key`, `key_slot`, `SEED_SLOTS`,
  `KeyTracker` with `stamp`, `weighted_choice` (pipeline/querygen.py says how they fit);
- its config schema: a dataclass whose fields that cannot change a result are
  `operational(...)`;
- its diagnosis tasks (pipeline/diagnosis.py, pipeline/answers.py; README "Task kinds"):
  `AppSpec(tasks=...)`, a `task` field in its config, `Vocabulary` of `Label`s from its
  `vocabulary(level)`, `task_text` for prompts, the ground truth's `healthy` and `causes`
  (`cause`), `answer_verdict` in its scorer, `TASKS`;
- its errors, from the one hierarchy: `ConfigError` (a bad setting, before any work),
  `QueryGenerationError`, `EnvironmentFailure` (not the agent's fault), `DataError`;
- helpers: `canonical_json`, `outcome_for_status`, `fenced_blocks` (code blocks of an
  untrusted reply), `JSON` (the decoder for untrusted JSON: any number of digits),
  `json_objects` and `first_object` (the JSON objects of a reply, read linearly),
  `write_whole` and `replacing` (atomic files);
- for its benchmarks, which drive the pipeline as a user does: `load_app` (an app as a
  cell makes it), `play_oracle`, `smollm2_tokens`, `SHARED_DATA`; the reply fuzzer's
  `FuzzTarget`, `fuzz_app` and `fuzz_figures` (pipeline/fuzz/).
"""

from __future__ import annotations

from pipeline.answers import answer_verdict, task_text
from pipeline.build import make_app
from pipeline.capacity import Capacity, cached
from pipeline.config import ROOT, compose
from pipeline.core import (
    Action,
    App,
    Environment,
    Episode,
    Outcome,
    Query,
    ReplyFormat,
    StepResult,
    StepStatus,
    TaskStep,
    Verdict,
    canonical_json,
    outcome_for_status,
)
from pipeline.diagnosis import TASKS, Label, Vocabulary, cause
from pipeline.errors import (
    ConfigError,
    DataError,
    EnvironmentFailure,
    NetGaugeError,
    QueryGenerationError,
)
from pipeline.files import replacing, write_whole
from pipeline.fuzz.harness import Target as FuzzTarget
from pipeline.fuzz.run import figures as fuzz_figures
from pipeline.fuzz.run import fuzz_app
from pipeline.play import EpisodeLoop, play_oracle
from pipeline.querygen import (
    SEED_SLOTS,
    KeyTracker,
    healthy_query,
    key_slot,
    query_id,
    query_key,
    query_rng,
    share_cap,
    stamp,
    weighted_choice,
)
from pipeline.registry import AgentSpec, AppSpec, BenchSpec
from pipeline.serving.models import smollm2_tokens
from pipeline.untrusted import JSON, fenced_blocks, first_object, json_objects
from pipeline.variants import operational

# Public reference data (Google's MALT example, Online Boutique), as conf/config.yaml's
# `shared_data_dir` names it by default.
SHARED_DATA = ROOT.parent / "shared" / "data"


def load_app(*overrides: str) -> App:
    """The app a cell of `conf/config.yaml` composed with `overrides` would use, e.g.
    `load_app("app=routing", "app.probe.protocols=[icmp]")`."""
    return make_app(compose(list(overrides)))


__all__ = [
    "JSON",
    "SEED_SLOTS",
    "SHARED_DATA",
    "TASKS",
    "Action",
    "AgentSpec",
    "App",
    "AppSpec",
    "BenchSpec",
    "Capacity",
    "ConfigError",
    "DataError",
    "Environment",
    "EnvironmentFailure",
    "Episode",
    "EpisodeLoop",
    "FuzzTarget",
    "KeyTracker",
    "Label",
    "NetGaugeError",
    "Outcome",
    "Query",
    "QueryGenerationError",
    "ReplyFormat",
    "StepResult",
    "StepStatus",
    "TaskStep",
    "Verdict",
    "Vocabulary",
    "answer_verdict",
    "cached",
    "canonical_json",
    "cause",
    "fenced_blocks",
    "first_object",
    "fuzz_app",
    "fuzz_figures",
    "healthy_query",
    "json_objects",
    "key_slot",
    "load_app",
    "operational",
    "outcome_for_status",
    "play_oracle",
    "query_id",
    "query_key",
    "query_rng",
    "replacing",
    "share_cap",
    "smollm2_tokens",
    "stamp",
    "task_text",
    "weighted_choice",
    "write_whole",
]
