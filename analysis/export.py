"""Datasets users take away: chat-format JSONL of oracle trajectories, for SFT.

    python -m analysis.export sft app=malt level=1 queries=200
    python -m analysis.export sft app=malt level=1,2,3 seed=0,1 queries=500 --out malt.jsonl

Arguments after `sft` are Hydra overrides of `conf/config.yaml` (any app key too, e.g.
`app.topology.source=file`); `level` and `seed` also take comma lists. For each query
the oracle plays an episode through the app's own environment (`pipeline.core.App`:
`observe`, `oracle_reply`, `step`), so every app exports the same way: capacity planning
gives the prompt and the ground-truth code; reactive apps give the oracle's commands
with the observations an agent would have seen. One JSON object per line:

    {"messages": [{"role": "user", "content": <first observation>},
                  {"role": "assistant", "content": <oracle reply>},
                  {"role": "user", "content": <what the environment returned>}, ...],
     "query_id": …, "app": …, "level": …, "seed": …, "operation": …, "answer_type": …,
     "app_version": …}

Only trajectories the app's scorer accepts are written. Load them with
`datasets.load_dataset("json", data_files=PATH, split="train")`. The default output is
`<data>/exports/sft/<app>-L<levels>-s<seeds>-n<queries>.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tqdm import tqdm

from pipeline.build import layout, make_app, queries_hash
from pipeline.cells import cell_from_config, data_root
from pipeline.config import compose
from pipeline.core import App, Query, StepResult
from pipeline.errors import ConfigError, DataError, NetGaugeError
from pipeline.generate import read_queries
from pipeline.records import shard_hash

log = logging.getLogger(__name__)
LIST_KEYS = ("level", "seed")


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], dict[str, list[int]]]:
    """Separate `level=1,2`/`seed=0,1` lists from the other overrides."""
    rest, lists = [], {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"expected key=value, got {item!r}")
        if key in LIST_KEYS:
            try:
                lists[key] = [int(v) for v in value.split(",") if v.strip()]
            except ValueError:
                raise ConfigError(f"{key}={value!r}: expected integers, e.g. {key}=1,2") from None
        elif key in ("agent", "model"):
            raise ConfigError(f"{key} cannot be chosen: the export plays the oracle")
        else:
            rest.append(item)
    return rest, lists


def configs(overrides: Sequence[str]) -> list[DictConfig]:
    """One composed config per (level, seed) the overrides ask for."""
    rest, lists = split_overrides(overrides)
    return [
        compose([*rest, "agent=oracle", "model=none", f"level={level}", f"seed={seed}"])
        for level in lists.get("level", [1])
        for seed in lists.get("seed", [0])
    ]


def queries_of(cfg: DictConfig, app: App) -> list[Query]:
    """The cell's queries: from its shard when it matches the config, else generated."""
    path = layout(cfg).queries(cell_from_config(cfg))
    if shard_hash(path) == queries_hash(cfg, app):
        return read_queries(path, limit=cfg.queries)
    return list(app.generate(cfg.level, cfg.seed, cfg.queries))


def trajectory(env: Any, app: App, query: Query) -> tuple[list[dict[str, str]], bool]:
    """The oracle's episode as chat messages, and whether the scorer accepts it."""
    messages: list[dict[str, str]] = []
    steps: list[StepResult] = []
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            messages.append({"role": "user", "content": observation})
            reply = app.oracle_reply(query, turn, observation)
            messages.append({"role": "assistant", "content": reply})
            result = episode.step(reply)
            steps.append(result)
            if result.done:
                break
            observation = result.output
    return messages, app.score(query, steps).correct


def sft_records(cfg: DictConfig, *, progress: bool = True) -> Iterator[dict[str, Any]]:
    """The accepted oracle trajectories of one (app, level, seed) cell, as JSON records."""
    app = make_app(cfg)
    queries = queries_of(cfg, app)
    rejected = 0
    with app.environment() as env:
        desc = f"sft {cfg.app.name} L{cfg.level} s{cfg.seed}"
        for query in tqdm(queries, desc=desc, unit="q", disable=not progress):
            messages, correct = trajectory(env, app, query)
            if not correct:
                rejected += 1
                continue
            yield {
                "messages": messages,
                "query_id": query.query_id,
                "app": query.app,
                "level": query.level,
                "seed": query.seed,
                "operation": query.operation,
                "answer_type": query.answer_type,
                "app_version": app.version,
            }
    if rejected:
        log.warning("%d oracle trajectories were not accepted by the scorer; left out", rejected)


def default_path(cfgs: Sequence[DictConfig]) -> Path:
    first = cfgs[0]
    levels = "_".join(str(c) for c in sorted({c.level for c in cfgs}))
    seeds = "_".join(str(c) for c in sorted({c.seed for c in cfgs}))
    name = f"{first.app.name}-L{levels}-s{seeds}-n{first.queries}.jsonl"
    return data_root(first.data_dir) / "exports" / "sft" / name


def export_sft(
    overrides: Sequence[str], out: str | Path | None = None, *, progress: bool = True
) -> tuple[Path, int]:
    """Write the SFT JSONL for the overrides; return its path and the number of records."""
    cfgs = configs(overrides)
    path = Path(out) if out is not None else default_path(cfgs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    count = 0
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for cfg in cfgs:
                for record in sft_records(cfg, progress=progress):
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                    count += 1
        if count == 0:
            raise DataError(f"no oracle trajectory was accepted for {' '.join(overrides)}")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path, count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="kind", required=True)
    p_sft = sub.add_parser("sft", help="chat-format JSONL of oracle trajectories")
    p_sft.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. app=malt level=1,2")
    p_sft.add_argument("--out", help="output file (default: <data>/exports/sft/…)")
    p_sft.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        path, count = export_sft(args.overrides, args.out, progress=not args.no_progress)
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{count} trajectories -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
