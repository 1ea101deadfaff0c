"""Datasets users take away: chat-format JSONL of oracle trajectories, for SFT.

    python -m analysis.export sft app=malt level=1 queries=200
    python -m analysis.export sft app=malt level=1,2,3 seed=2,3 queries=500 --out malt.jsonl

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
`<data>/exports/sft/<app>-L<levels>-s<seeds>-n<queries>.jsonl`, with what it was made of
beside it in `<same>.meta.json` (split, seeds, app settings, query keys checked, whether
an overlap was allowed).

Training data never overlaps what is evaluated: the export writes the `train` split
(pipeline/splits.py; the default seed is 2, the first train seed), refuses seeds of the
`test` split, and refuses a file that shares any query key with the episodes already
evaluated in the data directory, naming the overlapping seeds and keys. `--allow-overlap`
overrides both refusals and is recorded in the metadata file.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tqdm import tqdm

from pipeline import logs
from pipeline.build import app_version, make_app
from pipeline.cells import data_root
from pipeline.config import compose, load_choice, to_plain
from pipeline.core import App, Query, StepStatus
from pipeline.errors import ConfigError, DataError, EnvironmentFailure, NetGaugeError
from pipeline.files import replacing
from pipeline.generate import stored_queries
from pipeline.play import play_oracle
from pipeline.querygen import SEED_SLOTS
from pipeline.records import code_version
from pipeline.splits import SPLITS, seeds_of, split_of
from pipeline.views import connect

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
        for seed in lists.get("seed", seeds_of("train", 1))
    ]


def check_split(cfgs: Sequence[DictConfig], allow_overlap: bool) -> list[int]:
    """Refuse seeds of the test split (unless allowed); return the test seeds found."""
    test = sorted({int(c.seed) for c in cfgs if split_of(int(c.seed)) != "train"})
    if test and not allow_overlap:
        raise ConfigError(
            f"seed(s) {', '.join(map(str, test))} belong to the test split, which grids "
            f"evaluate; export the train split instead (seeds "
            f"{', '.join(map(str, seeds_of('train')))}, ...: seed % {SEED_SLOTS} in "
            f"{list(SPLITS['train'])}), or pass --allow-overlap"
        )
    return test


def evaluated_overlap(data_dir: str | Path, keys: dict[str, Query]) -> list[str]:
    """Lines naming each query of `keys` the data directory holds evaluated episodes of,
    whatever app config or variant evaluated it (the same query played by
    `routing_kathara`, or with other settings, is the same query)."""
    rows = (
        connect(data_dir)
        .execute(
            "SELECT query_key, any_value(query_id), string_agg(DISTINCT "
            "app || ' ' || model || '/' || agent || ' L' || level || ' s' || seed, ', ') "
            "FROM episodes WHERE query_key IS NOT NULL GROUP BY query_key"
        )
        .fetchall()
    )
    return [
        f"{keys[key].query_id} (key {key}) was evaluated as {qid} by {who}"
        for key, qid, who in rows
        if key in keys
    ]


def unkeyed_cells(data_dir: str | Path, kind: str) -> list[str]:
    """The evaluated cells of apps of `kind` whose episodes have no query key (written
    before keys existed, `variant=layout1`): whether they share a query with an export
    cannot be checked, whatever their seed (their queries were drawn before seeds owned
    key slots)."""
    rows = (
        connect(data_dir)
        .execute(
            "SELECT DISTINCT app, model, agent, level, seed, variant FROM episodes "
            "WHERE query_key IS NULL ORDER BY ALL"
        )
        .fetchall()
    )
    kinds = _kinds({row[0] for row in rows})
    return [
        f"{app} {model}/{agent} L{level} s{seed} (variant={variant})"
        for app, model, agent, level, seed, variant in rows
        if kinds.get(app, kind) == kind
    ]


def _overlap_message(data_dir: str, overlap: list[str], unchecked: list[str]) -> str:
    parts = []
    if overlap:
        parts.append(
            f"{len(overlap)} of the queries to export were already evaluated in {data_dir}: "
            f"training on them would contaminate those results:\n  {_shown(overlap)}"
        )
    if unchecked:
        parts.append(
            f"{len(unchecked)} evaluated cell(s) in {data_dir} have no query keys (written "
            "before keys existed), so whether they share queries with this export cannot be "
            f"checked:\n  {_shown(unchecked)}"
        )
    return "\n".join(parts) + (
        "\nuse seeds of the train split, another data_dir, or --allow-overlap"
    )


def _shown(lines: list[str], most: int = 10) -> str:
    more = f"\n  ... {len(lines) - most} more" if len(lines) > most else ""
    return "\n  ".join(lines[:most]) + more


def _kinds(apps: set[str]) -> dict[str, str]:
    """The app kind of each named app config that still exists (unknown names are left
    out, so they count as possibly of any kind)."""
    out = {}
    for name in apps:
        try:
            out[name] = str(load_choice("app", name).kind)
        except ConfigError:
            continue
    return out


def queries_of(cfg: DictConfig, app: App) -> list[Query]:
    """The cell's queries: from its shard when it matches the config and is long enough,
    else generated."""
    stored = stored_queries(cfg, app)
    return stored if stored is not None else list(app.generate(cfg.level, cfg.seed, cfg.queries))


def trajectory(env: Any, app: App, query: Query) -> tuple[list[dict[str, str]], bool]:
    """The oracle's episode as chat messages, and whether the scorer accepts it."""
    loop = play_oracle(app, env, query)
    failed = [s for s in loop.steps if s.status is StepStatus.ENV_ERROR]
    if failed:
        raise EnvironmentFailure(f"{query.query_id}: {failed[0].error}")
    messages = [
        {"role": role, "content": text}
        for turn in loop.history
        for role, text in (("user", turn.observation), ("assistant", turn.reply))
    ]
    return messages, app.score(query, loop.steps).correct


def sft_records(
    cfg: DictConfig, queries: Sequence[Query] | None = None, *, progress: bool = True
) -> Iterator[dict[str, Any]]:
    """The accepted oracle trajectories of one (app, level, seed) cell, as JSON records."""
    app = make_app(cfg)
    queries = queries if queries is not None else queries_of(cfg, app)
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
                "app_version": app_version(cfg),
                "query_key": query.key,
                "split": split_of(query.seed),
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
    overrides: Sequence[str],
    out: str | Path | None = None,
    *,
    progress: bool = True,
    allow_overlap: bool = False,
) -> tuple[Path, int]:
    """Write the SFT JSONL for the overrides; return its path and the number of records.
    Refuses test seeds and any query evaluated in the data directory (module docstring)."""
    cfgs = configs(overrides)
    test_seeds = check_split(cfgs, allow_overlap)
    planned = [(cfg, queries_of(cfg, make_app(cfg))) for cfg in cfgs]
    overlap = []
    for cfg, queries in planned:
        overlap += evaluated_overlap(cfg.data_dir, {q.key: q for q in queries if q.key})
    unchecked = unkeyed_cells(cfgs[0].data_dir, str(cfgs[0].app.kind))
    if (overlap or unchecked) and not allow_overlap:
        raise DataError(_overlap_message(str(cfgs[0].data_dir), overlap, unchecked))
    path = Path(out) if out is not None else default_path(cfgs)
    count = 0
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as handle:
        for cfg, queries in planned:
            for record in sft_records(cfg, queries, progress=progress):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        if count == 0:
            raise DataError(f"no oracle trajectory was accepted for {' '.join(overrides)}")
    meta = {
        "records": count,
        "split": "train" if not test_seeds else "train+test (allowed)",
        "seeds": sorted({int(c.seed) for c in cfgs}),
        "levels": sorted({int(c.level) for c in cfgs}),
        "queries": int(cfgs[0].queries),
        "app": to_plain(cfgs[0].app),
        "allow_overlap": allow_overlap,
        "test_seeds": test_seeds,
        "overlapping_queries": overlap,
        "unchecked_cells": unchecked,
        "query_keys": sorted({q.key for _, queries in planned for q in queries if q.key}),
        "code_version": code_version(),
    }
    meta_path = path.with_name(path.name + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
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
    p_sft.add_argument(
        "--allow-overlap",
        action="store_true",
        help="export test-split seeds or queries already evaluated here (recorded in .meta.json)",
    )
    args = parser.parse_args(argv)
    logs.configure(timestamps=False)
    try:
        path, count = export_sft(
            args.overrides,
            args.out,
            progress=not args.no_progress,
            allow_overlap=args.allow_overlap,
        )
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{count} trajectories -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
