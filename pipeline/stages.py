"""Command-line entry of every DAG stage: `python -m pipeline.stages STAGE --help`.

Snakemake rules are shims over these commands; each one composes the cell's config
with Hydra's compose API and calls one typed function, so every stage also runs (and
is tested) without Snakemake. The last two stages, summarize and report, read results
only: they are analysis's own commands (`python -m analysis summarize|report`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from pipeline import logs
from pipeline.build import cell_config
from pipeline.cells import NO_MODEL, cell_from_config, parse_cell
from pipeline.config import variant_overrides
from pipeline.errors import ConfigError, NetGaugeError
from pipeline.generate import generate
from pipeline.heartbeat import Heartbeat
from pipeline.plan import load_plan
from pipeline.runner import run, run_model
from pipeline.scoring import score


def _cell_args(parser: argparse.ArgumentParser, *, with_agent: bool) -> None:
    parser.add_argument("--app", required=True, help="app name (conf/app/*.yaml)")
    if with_agent:
        parser.add_argument("--agent", required=True, help="agent name (conf/agent/*.yaml)")
        parser.add_argument("--model", default=NO_MODEL, help="model name (conf/model/*.yaml)")
    parser.add_argument("--level", type=int, required=True, help="complexity level (1-3)")
    parser.add_argument("--seed", type=int, required=True, help="generation seed")
    parser.add_argument("--queries", type=int, required=True, help="queries in the cell")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hydra override of an app.*, agent.* or model.* key (repeatable): the variant",
    )
    parser.add_argument(
        "--variant",
        help="the variant the overrides must make (the DAG passes it; a mismatch is an error)",
    )


def _config(args: argparse.Namespace):
    """The cell's composed config, its variant checked against --variant."""
    agent = getattr(args, "agent", "oracle")
    model = getattr(args, "model", NO_MODEL)
    overrides = variant_overrides(args.overrides, "--set")
    draft = parse_cell(args.app, model, agent, args.level, args.seed, args.queries, overrides)
    cfg = cell_config(draft, args.data_dir)
    if args.variant is not None:
        found = cell_from_config(cfg)
        made = found.app_variant if args.stage == "generate" else found.variant
        if made != args.variant:
            raise ConfigError(
                f"the overrides {list(overrides)} make variant '{made}', expected "
                f"'{args.variant}'; the plan and the code disagree: re-plan the grid"
            )
    return cfg


def cmd_plan(args: argparse.Namespace) -> None:
    try:
        axes = json.loads(args.axes)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--axes must be a JSON object of grid axes: {err}") from None
    if not isinstance(axes, dict):
        raise ConfigError(f"--axes must be a JSON object of grid axes, got {args.axes!r}")
    plan = load_plan(args.grid, args.data_dir, axes)
    plan.write()
    print(f"plan '{plan.name}': {len(plan.cells)} cells -> {plan.layout.plan(plan.name)}")


def cmd_generate(args: argparse.Namespace) -> None:
    cfg = _config(args)
    with Heartbeat(f"generate {cell_from_config(cfg).query_part}"):
        print(generate(cfg))


def cmd_run(args: argparse.Namespace) -> None:
    cfg = _config(args)
    with Heartbeat(f"run {cell_from_config(cfg).part}"):
        print(run(cfg))


def cmd_run_model(args: argparse.Namespace) -> None:
    with Heartbeat(f"run_model_{args.model} (grid {args.grid})"):
        for path in run_model(args.grid, args.model, args.data_dir):
            print(path)


def cmd_score(args: argparse.Namespace) -> None:
    for path in score(_config(args)):
        print(path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.stages",
        description="Run one stage of the NetGauge DAG for one cell (what Snakemake calls).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    stages: dict[str, tuple[str, Callable[[argparse.Namespace], None], bool | None]] = {
        "plan": ("resolve a grid into cells; write data/plans/<grid>.json", cmd_plan, None),
        "generate": ("generate and validate a cell's queries", cmd_generate, False),
        "run": ("play a cell's queries with its agent", cmd_run, True),
        "run-model": (
            "play every cell of a grid that uses one model, on one server",
            cmd_run_model,
            None,
        ),
        "score": ("score a cell's transcripts into episodes and steps", cmd_score, True),
    }
    for name, (help_text, func, with_agent) in stages.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if with_agent is None:
            p.add_argument(
                "--grid",
                default="default",
                help="grid name (conf/grid/*.yaml); for stages after plan, the plan's name",
            )
            if name == "plan":
                p.add_argument(
                    "--axes",
                    default="{}",
                    help="grid axes to override, as JSON, e.g. '{\"queries\": [5, 10]}'",
                )
            if name == "run-model":
                p.add_argument("--model", required=True, help="model name (conf/model/*.yaml)")
        else:
            _cell_args(p, with_agent=with_agent)
        p.add_argument("--data-dir", default="data", help="data directory (default: data)")
        p.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(args.verbose)
    try:
        args.func(args)
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
