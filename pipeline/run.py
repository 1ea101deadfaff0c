"""Direct runs of cells with Hydra: `python -m pipeline.run [-m] key=value ...`.

    python -m pipeline.run app=malt agent=oracle level=2 queries=20
    python -m pipeline.run -m app=malt agent=oracle,null level=1,2,3 queries=20

    python -m pipeline.run -m app=malt agent=oracle queries=5,10 app.max_turns=1,2

Each job generates (if its queries shard is missing, stale or too short), runs and scores
one cell, writing exactly the shards the Snakemake DAG writes for it, and skips work whose
shard already matches its config hash. A cell is its full effective config: jobs that
differ in the query count or in any setting that can change a result (`app.*`, `agent.*`,
`model.*` but the operational ones) write side by side, under their own `queries=` and
`variant=` path fields (pipeline/variants.py). Hydra's own output goes to fixed folders
under <data_dir>/logs/hydra/, never timestamped.
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from pipeline import logs
from pipeline.build import layout, make_app, run_hash
from pipeline.cells import cell_from_config
from pipeline.config import CONF_DIR, check_overrides, quote_choices, searchpath, validate
from pipeline.errors import NetGaugeError
from pipeline.generate import generate
from pipeline.heartbeat import Heartbeat
from pipeline.preflight import check_cell, check_data_dir
from pipeline.records import read_shard, shard_hash
from pipeline.runner import run
from pipeline.scoring import score
from pipeline.splits import check_run_seeds
from pipeline.variants import variant_of

log = logging.getLogger(__name__)


def run_cell(cfg: DictConfig) -> dict[str, object]:
    """Bring one cell up to date; return its cell key and correctness rate."""

    check_cell(cfg)  # what needs no work, before any: the agent's and the model's needs
    app = make_app(cfg)
    cell = cell_from_config(cfg)
    paths = layout(cfg)
    with Heartbeat(cell.part):
        generate(cfg, app)  # a no-op when the shard already holds enough queries
        digest = run_hash(cfg)
        if shard_hash(paths.transcripts(cell)) != digest:
            run(cfg)
        scored = (paths.episodes(cell), paths.steps(cell), paths.calls(cell), paths.cells(cell))
        if any(shard_hash(p) != digest for p in scored):
            score(cfg)
    episodes = read_shard("episodes", paths.episodes(cell)).to_pydict()
    n = len(episodes["correct"])
    rate = sum(episodes["correct"]) / n if n else 0.0
    log.info("%s: %d episodes, %.1f %% correct", cell.part, n, 100 * rate)
    print(f"{cell.part}: n={n} correct={100 * rate:.1f}% -> {paths.episodes(cell)}")
    if cell.variant != "base":
        print(f"  variant {cell.variant}: {variant_of(cfg).label}")
    return {"cell": cell.part, "n": n, "correct": rate}


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def main(cfg: DictConfig) -> dict[str, object]:
    logs.quiet_libraries()  # Hydra set the logging up; a line per model request is noise
    try:
        return run_cell(validate(cfg))
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    try:
        given = [a for a in sys.argv[1:] if not a.startswith("-")]
        check_overrides(given)
        # Hydra makes its log folder in the data directory before any of our code runs.
        for data_dir in {a.partition("=")[2] for a in given if a.startswith("data_dir=")} or {
            "data"
        }:
            check_data_dir(data_dir)
        for warning in check_run_seeds(given):
            print(f"warning: {warning}", file=sys.stderr)
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.argv[1:] = [*searchpath(), *quote_choices(sys.argv[1:])]
    main()
