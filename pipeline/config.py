"""Composing and validating NetGauge's Hydra configs, for the DAG and for direct runs.

The primary config `conf/config.yaml` picks one choice per group (app, agent, model,
grid). The dataclasses below are the schema of the parts the pipeline owns; an app's
own section is checked against the schema class its registry entry names. Every
failure is a `ConfigError` that names the key and the allowed values.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline import registry
from pipeline.configkeys import check_keys
from pipeline.core import canonical_json
from pipeline.diagnosis import TASKS
from pipeline.errors import ConfigError
from pipeline.registry import conf_dirs
from pipeline.trials import trial_seed

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "conf"
GROUPS = ("app", "agent", "model", "grid")
CELL_KEYS = ("app", "model", "agent", "level", "seed", "queries", "variant")
# The grid's axes, also settable with `snakemake --config KEY=VALUE` (VALUE a YAML list).
GRID_AXES = (
    "apps", "agents", "models", "levels", "seeds", "queries", "variants", "tasks", "trials"
)  # fmt: skip
EXCLUDE_KEYS = (*CELL_KEYS, "task")  # what a grid's exclude entry may name
VARIANT_GROUPS = ("app", "agent", "model")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass
class FocusConfig:
    """Failure-driven sampling (pipeline/focus.py): draw more of what an earlier run failed."""

    results: str | None = None  # data dir of an earlier run to learn from; null: uniform
    agent: str | None = None  # "model/agent" whose failures count; null: every agent
    strength: float = 1.0  # how sharply failures are favoured (0: uniform)
    smoothing: float = 0.05  # added to every failure rate, so nothing drops out entirely

    def validate(self) -> None:
        if self.strength < 0:
            raise ConfigError(f"focus.strength={self.strength} must be >= 0")
        if self.smoothing <= 0:
            raise ConfigError(f"focus.smoothing={self.smoothing} must be > 0")
        if self.agent is not None and self.agent.count("/") != 1:
            raise ConfigError(
                f"focus.agent='{self.agent}' must be 'model/agent', e.g. smollm2/zero_shot"
            )


@dataclass
class AgentConfig:
    name: str = "oracle"  # the cell key; equals the YAML file's stem
    kind: str = "oracle"  # registry key of the implementation
    uses_model: bool = False  # reference agents run without a model: their cells get model=none


@dataclass
class ModelConfig:
    name: str = "none"  # the cell key; "none" for agents that need no model
    kind: str = "none"  # how the model is reached ("none" here; serving adds more)


@dataclass
class GridConfig:
    name: str = "default"
    apps: list[str] = field(default_factory=lambda: ["malt"])
    agents: list[str] = field(default_factory=lambda: ["oracle", "null"])
    models: list[str] = field(default_factory=lambda: ["none"])
    levels: list[int] = field(default_factory=lambda: [1, 2, 3])
    seeds: list[int] = field(default_factory=lambda: [0])
    queries: Any = 20  # queries per cell: an integer or a list of them (an axis)
    split: str = "test"  # the seeds' split (pipeline/splits.py): test seeds are never exported
    # true: a cell asking more queries than one seed can get of its (app, level) gets what
    # there is (its count in the path says so); false: such a grid is refused.
    up_to_capacity: bool = False
    # Config variants: each entry is a list of Hydra overrides of app.*, agent.* or model.*
    # keys ([] = as the named files say); every cell runs once per entry.
    variants: list[Any] = field(default_factory=lambda: [[]])
    # Cells to leave out: each entry matches cells on the keys it names (app, model,
    # agent, level, seed, queries, variant, task), e.g. {app: routing, agent: zero_shot}.
    exclude: list[Any] = field(default_factory=list)
    # Task kinds (pipeline/diagnosis.py): each app's cells once per task, as the variant
    # app.task=<task>; [] plays each app's configured task. A task an app does not offer
    # is refused unless an exclude entry names it ({app: malt, task: detect}).
    tasks: list[str] = field(default_factory=list)
    # Repeated trials (pipeline/trials.py): each cell played `trials` times, trial t with
    # its own sampling seed; 1 (the default) is each cell once, as without the key.
    trials: int = 1


@dataclass
class RunConfig:
    flush_every_s: float = 5.0  # checkpoint finished episodes at most this often
    concurrency: int = 1  # episodes at once (each with its own environment)
    env_error_policy: str = "fail"  # fail: env_error episodes fail the cell (retried on rerun)


@dataclass
class NetGaugeConfig:
    # app, agent and model are checked against the schema their `kind` names in the registry.
    app: Any = None
    agent: Any = None
    model: Any = None
    grid: GridConfig = field(default_factory=GridConfig)
    run: RunConfig = field(default_factory=RunConfig)
    level: int = 1
    seed: int = 0
    queries: int = 20
    # Keep queries whose key repeats an earlier one's (marked in ground_truth.repeat_of)
    # instead of drawing until distinct; a result setting (it changes the queries).
    allow_repeats: bool = False
    # Failure-driven sampling: draw more of what an earlier run's agent failed
    # (pipeline/focus.py); a result setting (it changes the queries).
    focus: FocusConfig = field(default_factory=FocusConfig)
    # Which repeated trial of the cell this is (pipeline/trials.py): 0 is the cell as
    # configured; t > 0 plays it again with the model's sampling seed derived from t.
    trial: int = 0
    data_dir: str = "data"
    shared_data_dir: str = "../shared/data"


def data_root(data_dir: str | Path) -> Path:
    """The data directory: `data_dir`, relative to the project root unless absolute."""
    path = Path(data_dir)
    return path if path.is_absolute() else ROOT / path


def choices(group: str) -> list[str]:
    """The config files available in `conf/<group>/` (and the app path's conf dirs), by stem."""
    return sorted({p.stem for root in conf_dirs() for p in (root / group).glob("*.yaml")})


def check_choice(group: str, name: str) -> str:
    """Return `name` if `conf/<group>/<name>.yaml` exists, else raise a ConfigError."""
    options = choices(group)
    if name in options:
        return name
    hint = difflib.get_close_matches(name, options, n=1)
    near = f" (did you mean '{hint[0]}'?)" if hint else ""
    raise ConfigError(f"unknown {group} '{name}'{near}; choose one of: {', '.join(options)}")


def check_overrides(overrides: Sequence[str]) -> None:
    """Catch unknown group choices (also comma sweeps) and unknown keys in CLI overrides,
    with our wording (pipeline/configkeys.py), before Hydra answers with its own."""
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.lstrip("+~")
        if sep and key in GROUPS:
            for name in value.split(","):
                check_choice(key, name.strip().strip("'\""))
    try:
        check_keys(overrides, NetGaugeConfig)
    except ConfigError as err:
        if "unknown config key 'app.task'" in str(err):
            raise ConfigError(_no_task(overrides)) from err  # the task axis says why
        raise


_KEYWORDS = {"null", "true", "false", "nan", "inf"}


def quote_choices(overrides: Sequence[str]) -> list[str]:
    """Quote group choices that Hydra's override grammar would read as keywords.

    `agent=null` would otherwise mean "no agent" to Hydra, not conf/agent/null.yaml.
    """
    out = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep and key.lstrip("+~") in GROUPS and not value.startswith(("[", "'", '"')):
            parts = [f"'{v}'" if v.strip().lower() in _KEYWORDS else v for v in value.split(",")]
            item = f"{key}={','.join(parts)}"
        out.append(item)
    return out


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """Compose `conf/config.yaml` with Hydra's compose API (safe inside Snakemake)."""
    return validate(compose_raw(overrides))


def compose_raw(overrides: Sequence[str] = ()) -> DictConfig:
    """Hydra's composition alone: group files inherit through `defaults:`, and the conf
    dirs of $NETGAUGE_APP_PATH are on the search path; nothing checked against schemas."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    check_overrides(overrides)
    # Inside a @hydra.main job (pipeline.run) Hydra is already initialised: set it aside
    # for this composition and put it back after.
    outer = GlobalHydra.instance()
    saved = outer.hydra if outer.is_initialized() else None
    outer.clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            return hydra_compose(
                config_name="config", overrides=[*searchpath(), *quote_choices(overrides)]
            )
    except (HydraException, OmegaConfBaseException) as err:
        if "Could not override 'app.task'" in str(err):
            raise ConfigError(_no_task(overrides)) from err
        raise ConfigError(f"bad configuration override: {_first_line(err)}") from err
    finally:
        if saved is not None:
            GlobalHydra.instance().clear()
            GlobalHydra.instance().initialize(saved)


def _no_task(overrides: Sequence[str]) -> str:
    """Why `app.task=...` cannot be set: the app's config has no task (only mitigate)."""
    given = dict(o.split("=", 1) for o in overrides if "=" in o)
    task = given.get("app.task", given.get("+app.task", "?"))
    app = given.get("app", "the default app")
    return (
        f"app.task={task} is not offered by app '{app}': it has no task setting and offers "
        "only mitigate"
    )


def searchpath() -> list[str]:
    """The Hydra override that adds the app path's conf dirs (none without an app path)."""
    extra = [f"file://{root}" for root in conf_dirs()[1:]]
    return [f"hydra.searchpath=[{','.join(extra)}]"] if extra else []


def load_choice(group: str, name: str) -> DictConfig:
    """One config of a group as Hydra composes it (with what it inherits), checked against
    its schema."""
    check_choice(group, name)
    node = compose_raw([f"{group}={name}"])[group]
    if node.get("name") != name:
        raise ConfigError(
            f"conf/{group}/{name}.yaml sets name '{node.get('name')}'; it must equal the file stem"
        )
    return section(group, node)


def validate(cfg: DictConfig) -> DictConfig:
    """Check `cfg` against the schemas; return it resolved, typed and read-only."""
    cfg = merge_schema(cfg, "", NetGaugeConfig)
    for group in ("app", "agent", "model"):
        node = cfg[group]
        name = node.get("name") if isinstance(node, DictConfig) else None
        if name is None:
            raise ConfigError(
                f"the {group} config has no 'name' key; every conf/{group}/*.yaml must set one"
            )
        check_choice(group, str(name))
        cfg[group] = section(group, node)
    check_choice("grid", cfg.grid.name)
    for key, low in (
        ("level", 1), ("seed", 0), ("queries", 1), ("run.concurrency", 1), ("trial", 0)
    ):  # fmt: skip
        if OmegaConf.select(cfg, key) < low:
            raise ConfigError(
                f"{key}={OmegaConf.select(cfg, key)} is out of range; expected an integer >= {low}"
            )
    # The one check of a level: every stage, direct run and Gym env composes through here.
    registry.APPS.get(str(cfg.app.get("kind", cfg.app.name))).check_level(cfg.level)
    OmegaConf.to_object(cfg.focus).validate()
    if cfg.run.env_error_policy not in ("fail", "record"):
        raise ConfigError(
            f"run.env_error_policy='{cfg.run.env_error_policy}' is not allowed; "
            "choose one of: fail, record"
        )
    if cfg.trial and cfg.agent.uses_model:  # a trial's seed derives from model.seed
        trial_seed(cfg.model.get("seed"), cfg.trial)
    _check_grid(cfg.grid)
    OmegaConf.set_readonly(cfg, True)
    return cfg


def section(group: str, node: DictConfig) -> DictConfig:
    """Check an app, agent or model section against the schema its `kind` names."""
    kind = node.get("kind", node.get("name"))
    schema = registry.schema(group, str(kind))
    if group == "app":
        check_task(str(kind), node.get("task"), schema)
    merged = merge_schema(node, group, schema)
    checker = getattr(OmegaConf.to_object(merged), "validate", None)
    if checker is not None:
        checker()  # the app's own value checks (enums, ranges), before any work
    return merged


def has_task(schema: type) -> bool:
    """Whether an app config schema has the `task` field (apps offering detect/localize)."""
    return dataclasses.is_dataclass(schema) and any(
        f.name == "task" for f in dataclasses.fields(schema)
    )


def check_task(kind: str, task: Any, schema: type) -> None:
    """An app section's `task` (None: not set) against what its app kind offers."""
    spec = registry.APPS.get(kind)
    if len(spec.tasks) > 1 and not has_task(schema):
        raise ConfigError(
            f"app kind '{kind}' offers the tasks {', '.join(spec.tasks)} but its config "
            f"schema {schema.__name__} has no 'task' field to choose one"
        )
    if task is None:
        return
    spec.check_task(str(task))
    if not has_task(schema):  # mitigate, the only task of an app without the setting
        raise ConfigError(
            f"app.task={task}: app kind '{kind}' has no task setting; it offers only mitigate"
        )


def merge_schema(section: Any, prefix: str, schema: type) -> DictConfig:
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), section)
        OmegaConf.resolve(merged)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "?"
        where = f"{prefix}.{key}" if prefix and key != "?" else (key or prefix)
        raise ConfigError(f"config key '{where}': {_first_line(err)}") from err
    return merged


def _check_grid(grid: DictConfig) -> None:
    for group, values in (("app", grid.apps), ("agent", grid.agents), ("model", grid.models)):
        if not values:
            raise ConfigError(f"grid '{grid.name}' lists no {group}s; list at least one")
        for name in values:
            check_choice(group, name)
    if not grid.levels or any(level < 1 for level in grid.levels):
        raise ConfigError(f"grid '{grid.name}': levels must be integers >= 1, got {grid.levels}")
    if not grid.seeds or any(seed < 0 for seed in grid.seeds):
        raise ConfigError(f"grid '{grid.name}': seeds must be integers >= 0, got {grid.seeds}")
    counts = query_counts(grid.queries)
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
        raise ConfigError(
            f"grid '{grid.name}': queries must be an integer >= 1 or a list of them, "
            f"got {to_plain(grid.queries)}"
        )
    if isinstance(grid.trials, bool) or grid.trials < 1:
        raise ConfigError(f"grid '{grid.name}': trials must be an integer >= 1, got {grid.trials}")
    for entry in grid.variants:
        variant_overrides(entry, where=f"grid '{grid.name}': variants entry")
    for entry in grid.exclude:
        keys = set(entry) if isinstance(entry, DictConfig) else set()
        if not keys or keys - set(EXCLUDE_KEYS):
            raise ConfigError(
                f"grid '{grid.name}': exclude entry {to_plain(entry)} must map some of "
                f"{', '.join(EXCLUDE_KEYS)} to a value"
            )
    for task in grid.tasks:
        if task not in TASKS:
            raise ConfigError(
                f"grid '{grid.name}': tasks holds '{task}'; choose from: {', '.join(TASKS)}"
            )


def query_counts(value: Any) -> list[int]:
    """The grid's `queries` as a list (an integer is a list of one)."""
    value = to_plain(value) if isinstance(value, DictConfig | ListConfig) else value
    return list(value) if isinstance(value, list | tuple) else [value]


def variant_overrides(entry: Any, where: str) -> tuple[str, ...]:
    """A variants entry checked: a list of `app.*=`, `agent.*=` or `model.*=` overrides."""
    entry = to_plain(entry) if isinstance(entry, DictConfig | ListConfig) else entry
    if not isinstance(entry, list | tuple) or not all(isinstance(o, str) for o in entry):
        raise ConfigError(f"{where} {entry!r} must be a list of overrides like app.max_turns=5")
    for item in entry:
        key, sep, _ = item.partition("=")
        if (key in ("allow_repeats", "trial") or key.startswith("focus.")) and sep:
            continue  # trial: a repeated trial's (pipeline/trials.py)
        if not sep or key.split(".")[0] not in VARIANT_GROUPS or "." not in key:
            raise ConfigError(
                f"{where}: {item!r} is not KEY=VALUE with KEY under "
                f"{', '.join(g + '.' for g in VARIANT_GROUPS)} (e.g. app.max_turns=5), "
                "allow_repeats=true, focus.<key>=... (failure-driven sampling) or trial=<t>"
            )
    return tuple(entry)


def to_plain(section: Any) -> Any:
    return (
        OmegaConf.to_container(section, resolve=True)
        if isinstance(section, DictConfig | ListConfig)
        else section
    )


def config_hash(*parts: Any) -> str:
    """A short, stable fingerprint of config sections (stored in every shard)."""
    payload = canonical_json([to_plain(p) for p in parts])
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def check_time_limits(turn_timeout_s: float, episode_timeout_s: float) -> None:
    """Both limits of an external agent (MCP, A2A) are positive numbers of seconds."""
    for key, value in (
        ("turn_timeout_s", turn_timeout_s),
        ("episode_timeout_s", episode_timeout_s),
    ):
        if not value > 0:
            raise ConfigError(f"agent.{key}={value} is out of range; expected > 0 seconds")


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    # OmegaConf's "full_key: …", "object_type=…" lines repeat what the message names.
    noise = ("full_key:", "object_type=", "reference_type=")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(noise)]
    # Hydra puts the useful part ("Could not find 'app/mat'", options) over several lines.
    return " ".join(lines[:6]) if lines else type(err).__name__
