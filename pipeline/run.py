"""Direct runs of cells with Hydra: `python -m pipeline.run [-m] key=value ...`.

    python -m pipeline.run app=malt agent=oracle level=2 queries=20
    python -m pipeline.run -m app=malt agent=oracle,null level=1,2,3 queries=20

Each job generates (if its queries shard is missing or stale), runs and scores one cell,
writing exactly the shards the Snakemake DAG writes for it (paths depend only on the
cell), and skips work whose shard already matches its config hash. Hydra's own output
goes to fixed folders under <data_dir>/logs/hydra/, never timestamped.
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from pipeline.config import CONF_DIR, check_overrides, quote_choices, validate
from pipeline.errors import NetGaugeError

log = logging.getLogger(__name__)


def run_cell(cfg: DictConfig) -> dict[str, object]:
    """Bring one cell up to date; return its cell key and correctness rate."""
    from pipeline.build import layout, make_app, queries_hash, run_hash
    from pipeline.cells import cell_from_config
    from pipeline.generate import generate
    from pipeline.records import read_shard, shard_hash
    from pipeline.runner import run
    from pipeline.scoring import score

    app = make_app(cfg)
    cell = cell_from_config(cfg)
    paths = layout(cfg)
    if shard_hash(paths.queries(cell)) != queries_hash(cfg, app):
        generate(cfg, app)
    digest = run_hash(cfg, app)
    if shard_hash(paths.transcripts(cell)) != digest:
        run(cfg)
    if any(
        shard_hash(p) != digest
        for p in (paths.episodes(cell), paths.steps(cell), paths.calls(cell))
    ):
        score(cfg)
    episodes = read_shard("episodes", paths.episodes(cell)).to_pydict()
    n = len(episodes["correct"])
    rate = sum(episodes["correct"]) / n if n else 0.0
    log.info("%s: %d episodes, %.1f %% correct", cell.part, n, 100 * rate)
    print(f"{cell.part}: n={n} correct={100 * rate:.1f}% -> {paths.episodes(cell)}")
    return {"cell": cell.part, "n": n, "correct": rate}


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def main(cfg: DictConfig) -> dict[str, object]:
    try:
        return run_cell(validate(cfg))
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    try:
        check_overrides([a for a in sys.argv[1:] if not a.startswith("-")])
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.argv[1:] = quote_choices(sys.argv[1:])
    main()
