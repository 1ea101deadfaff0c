"""Figures of MALT's capacity-planning levels (4, 5) next to levels 1-3: prompt sizes in
tokens, and the time to generate 100 queries and to play the oracle on them.

`python -m pipeline.bench --only malt_plans`, for malt (its default synthetic topology) and
malt_google. Per app and level, on seed 0:

- `prompt_tokens_{median,max}`: SmolLM2's own count (its tokenizer, read from the GGUF the
  engine venv holds, `.venv-vllm`) when that venv is installed; `prompt_tokens_approx_*`
  always: characters / 4, the usual rule of thumb for English and code under BPE
  tokenizers. The prompt text only, without a chat template;
- `generate_100_{s,cpu_s}`: wall and CPU seconds to generate and validate 100 queries (the
  topology's indices built beforehand, as a DAG job builds them once);
- `oracle_100_s`: seconds to play the oracle's reply on each in the real sandbox and score
  it, with `oracle_correct_and_safe` and `null_correct` (the empty reply) as a check.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from emulators.pysandbox.sandbox import GraphSandbox
from generators.malt.app import MaltEpisode
from generators.malt.config import TopologyConfig
from generators.malt.generator import LEVELS, MaltQueryGenerator
from generators.malt.scoring import score
from generators.malt.topology import load_topology
from pipeline.api import SHARED_DATA, smollm2_tokens


def bench_app(graph: Any, topology_id: str, app_name: str, count: int) -> dict[str, Any]:
    gen = MaltQueryGenerator(graph, topology_id, app_name=app_name)
    out: dict[str, Any] = {}
    prompts: dict[int, list[str]] = {}
    with GraphSandbox(graph) as box:
        for level in LEVELS:
            start, cpu = time.perf_counter(), time.process_time()
            queries = list(gen.generate(level, 0, count))
            key = f"{app_name}_L{level}"
            if level >= 4:
                out[f"{key}_generate_{count}_s"] = round(time.perf_counter() - start, 2)
                out[f"{key}_generate_{count}_cpu_s"] = round(time.process_time() - cpu, 2)
                oracle = null = 0
                start = time.perf_counter()
                for query in queries:
                    code = query.ground_truth["oracle_code"]
                    verdict = score(query, [MaltEpisode(query, box, 1).step(code)], gen.checker)
                    oracle += verdict.correct and verdict.safe
                out[f"{key}_oracle_{count}_s"] = round(time.perf_counter() - start, 2)
                for query in queries:
                    null += score(query, [MaltEpisode(query, box, 1).step("")], gen.checker).correct
                out[f"{key}_oracle_correct_and_safe"] = oracle
                out[f"{key}_null_correct"] = null
            prompts[level] = [q.prompt for q in queries]
            approx = [len(p) / 4 for p in prompts[level]]
            out[f"{key}_prompt_tokens_approx_median"] = round(statistics.median(approx))
            out[f"{key}_prompt_tokens_approx_max"] = round(max(approx))
    counted = smollm2_tokens([p for level in LEVELS for p in prompts[level]])
    if counted is not None:
        for level in LEVELS:
            mine, counted = counted[: len(prompts[level])], counted[len(prompts[level]) :]
            out[f"{app_name}_L{level}_prompt_tokens_median"] = round(statistics.median(mine))
            out[f"{app_name}_L{level}_prompt_tokens_max"] = max(mine)
    return out


def run_plans(shared_data_dir: Path, count: int = 100) -> dict[str, Any]:
    """`bench_app` for malt (its default synthetic topology) and malt_google."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        sources = [("malt", TopologyConfig(source="synthetic"))]
        if (shared_data_dir / "malt").exists():
            sources.append(("malt_google", TopologyConfig(source="file")))
        for name, cfg in sources:
            graph, topology_id = load_topology(cfg, Path(cache), shared_data_dir)
            results.update(bench_app(graph, topology_id, name, count))
    results["tokenizer"] = (
        "smollm2 (and chars/4)"
        if any(k.endswith("_prompt_tokens_median") for k in results)
        else "chars/4 only"
    )
    return results


def bench(data: Path) -> dict[str, Any]:
    """Levels 4 and 5 next to 1-3: prompt sizes in tokens; seconds to generate 100 queries and
    to play the oracle on them in the sandbox, per level of malt and malt_google."""
    return run_plans(SHARED_DATA)
