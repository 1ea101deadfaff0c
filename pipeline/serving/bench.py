"""Serving speed: server start-to-ready time, throughput one at a time vs concurrently,
and the CPU engine's thread binding (vLLM's automatic one vs NetGauge's choice).

    python -m pipeline.serving.bench [--data-dir data] [--model smollm2] [--binding]

`run_all(data_dir)` has the shape of pipeline.bench's benchmarks (a flat dict of figures
and the targets they are held to). It starts the model's managed server once, warms it up,
then sends the same prompt set twice: one request at a time, and `concurrency` at a time.
Aggregate throughput is the completion tokens of all requests over the wall time.

`run_binding(data_dir)` starts the server once per binding (`cpu_bind=auto`, then
`available`) and prefix mode (the server's prefix cache on, as in a sweep, then off),
back to back in one run, and measures generated tokens/s at 1 and `concurrency` in flight
on MALT-sized prompts (the prompts of MALT level 3 queries, each sent once).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.build import make_app
from pipeline.cells import data_root
from pipeline.config import compose
from pipeline.errors import ConfigError
from pipeline.serving.client import ChatClient, ChatResult, Sampling
from pipeline.serving.config import load_model_config
from pipeline.serving.models import vllm_python
from pipeline.serving.server import ManagedServer, open_endpoint

TOPICS = (
    "OSPF", "BGP", "VLANs", "spanning tree", "MPLS", "TCP congestion control", "DNS",
    "DHCP", "NAT", "IPv6", "ECMP routing", "a datacenter Clos fabric", "QoS queues",
    "link aggregation", "VXLAN", "network monitoring",
)  # fmt: skip


def prompts(n: int) -> list[list[dict[str, str]]]:
    """`n` chat prompts that each ask for a long answer (so max_tokens is what stops it)."""
    ask = "Explain {} to a new network engineer in detail, step by step."
    return [[{"role": "user", "content": ask.format(TOPICS[i % len(TOPICS)])}] for i in range(n)]


async def _throughput(
    client: ChatClient, batch: Sequence[list[dict[str, str]]], concurrency: int, s: Sampling
) -> tuple[float, list[ChatResult]]:
    """Wall time and results of `batch`, with at most `concurrency` requests in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict[str, str]]) -> ChatResult:
        async with gate:
            return await client.chat(messages, sampling=s)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(m) for m in batch))
    return time.perf_counter() - started, list(results)


def _figures(prefix: str, wall: float, results: list[ChatResult]) -> dict[str, Any]:
    tokens = sum(r.completion_tokens for r in results)
    return {
        f"{prefix}_wall_s": round(wall, 2),
        f"{prefix}_completion_tokens": tokens,
        f"{prefix}_tokens_per_s": round(tokens / wall, 1),
        f"{prefix}_median_ttft_s": round(statistics.median(r.ttft_s for r in results), 3),
        f"{prefix}_median_latency_s": round(statistics.median(r.latency_s for r in results), 2),
    }


async def _measure(
    server: ManagedServer, requests: int, concurrency: int, max_tokens: int
) -> dict[str, Any]:
    s = Sampling(temperature=0.0, max_tokens=max_tokens, seed=0)
    batch = prompts(requests)
    async with ChatClient.for_endpoint(server, max_in_flight=concurrency) as client:
        await client.chat(batch[0], sampling=Sampling(max_tokens=8))  # warm-up
        single = await _throughput(client, batch, 1, s)
        many = await _throughput(client, batch, concurrency, s)
    figures = {**_figures("single", *single), **_figures(f"concurrent{concurrency}", *many)}
    ratio = figures[f"concurrent{concurrency}_tokens_per_s"] / figures["single_tokens_per_s"]
    figures["concurrency_speedup"] = round(ratio, 2)
    return figures


def run_all(
    data_dir: Path,
    *,
    model: str = "smollm2",
    requests: int = 16,
    concurrency: int = 8,
    max_tokens: int = 128,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Start the model's managed server, measure, stop it; figures in seconds and tokens/s."""
    cfg = dataclasses.replace(load_model_config(model), **(overrides or {}))
    server = open_endpoint(cfg, data_dir)
    if not isinstance(server, ManagedServer):
        raise ConfigError(f"model '{model}' is not managed (endpoint: {cfg.endpoint})")
    with server:
        figures = {"server_start_to_ready_s": round(server.startup_s or 0.0, 1)}
        figures |= asyncio.run(_measure(server, requests, concurrency, max_tokens))
    figures |= {
        "requests": requests,
        "max_tokens": max_tokens,
        "concurrency": concurrency,
        "target_concurrency_speedup": 4.0,
    }
    return figures


def bench(data: Path) -> dict[str, Any]:
    """`make bench`'s serving: CPU vLLM with the embedded model, start-to-ready, 8 concurrent
    vs 1 at a time."""
    if not vllm_python().exists():
        return {"skipped": "the CPU vLLM engine is not installed (make setup)"}
    return run_all(data)


def binding(data: Path) -> dict[str, Any]:
    """CPU vLLM: generated tokens/s at 1 and 8 in flight on MALT-sized prompts, with vLLM's
    automatic thread binding and with NetGauge's (every available CPU), in one run."""
    if not vllm_python().exists():
        return {"skipped": "the CPU vLLM engine is not installed (make setup)"}
    return run_binding(data)


def malt_prompts(n: int) -> list[list[dict[str, str]]]:
    """The prompts of the first `n` MALT level-3 queries (seed 0), as chat messages."""
    app = make_app(compose(["app=malt", "level=3"]))
    return [[{"role": "user", "content": q.prompt}] for q in app.generate(3, 0, n)]


# How the engine treats the instructions every MALT prompt shares (about 90 % of each
# prompt): "prefix_cached" is the server's default and what a sweep gets (the shared text is
# computed once, each request prefills only its own question, so decoding dominates);
# "no_prefix_cache" prefills every prompt in full (the long matrix products of prefill
# dominate).
PREFIX_MODES: dict[str, list[str]] = {
    "prefix_cached": [],
    "no_prefix_cache": ["--no-enable-prefix-caching"],
}


def _rates(
    server: ManagedServer, batch: Sequence[list[dict[str, str]]], concurrency: int, s: Sampling
) -> dict[str, Any]:
    """Generated tokens/s one at a time and `concurrency` at a time. Every prompt is sent
    once: the first warms the server, the next `concurrency` go one at a time, the rest
    `concurrency` at a time (no prompt is sent twice, so none is served whole from the
    prefix cache)."""
    warm, single, many = batch[0], batch[1 : 1 + concurrency], batch[1 + concurrency :]

    async def go() -> dict[str, Any]:
        async with ChatClient.for_endpoint(server, max_in_flight=concurrency) as client:
            await client.chat(warm, sampling=Sampling(max_tokens=8))
            one = await _throughput(client, single, 1, s)
            lots = await _throughput(client, many, concurrency, s)
        return {
            "tokens_per_s_1": round(sum(r.completion_tokens for r in one[1]) / one[0], 1),
            f"tokens_per_s_{concurrency}": round(
                sum(r.completion_tokens for r in lots[1]) / lots[0], 1
            ),
            "prompt_tokens_median": int(statistics.median(r.prompt_tokens for r in lots[1])),
        }

    return asyncio.run(go())


def run_binding(
    data_dir: Path,
    *,
    model: str = "smollm2",
    requests: int = 16,
    concurrency: int = 8,
    max_tokens: int = 128,
) -> dict[str, Any]:
    """Generated tokens/s at 1 and `concurrency` in flight, per binding (vLLM's `auto`,
    NetGauge's `available`) and per prefix mode (`PREFIX_MODES`), in one run: one server
    start per pair, back to back, on the same prompts."""
    batch = malt_prompts(1 + concurrency + requests)
    s = Sampling(temperature=0.0, max_tokens=max_tokens, seed=0)
    base = load_model_config(model)
    figures: dict[str, Any] = {}
    for mode, flags in PREFIX_MODES.items():
        for binding in ("auto", "available"):
            cfg = dataclasses.replace(
                base, cpu_bind=binding, extra_flags=[*base.extra_flags, *flags]
            )
            server = open_endpoint(cfg, data_dir)
            if not isinstance(server, ManagedServer):
                raise ConfigError(f"model '{model}' is not managed (endpoint: {cfg.endpoint})")
            with server:
                cores = re.findall(r"core ids=\[([\d, ]*)\]", server.log_path.read_text())
                rates = _rates(server, batch, concurrency, s)
            figures |= {f"{mode}_{binding}_{k}": v for k, v in rates.items()}
            figures[f"{mode}_{binding}_core_ids"] = cores[-1] if cores else "?"
        for n in (1, concurrency):
            figures[f"{mode}_available_vs_auto_{n}"] = round(
                figures[f"{mode}_available_tokens_per_s_{n}"]
                / figures[f"{mode}_auto_tokens_per_s_{n}"],
                2,
            )
    figures |= {
        "requests": requests,
        "max_tokens": max_tokens,
        f"target_available_vs_auto_{concurrency}": 1.5,
    }
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.serving.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    parser.add_argument("--model", default="smollm2", help="conf/model/<model>.yaml")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--binding", action="store_true", help="compare vLLM's CPU binding with NetGauge's"
    )
    args = parser.parse_args(argv)
    measure = run_binding if args.binding else run_all
    figures = measure(
        data_root(args.data_dir),
        model=args.model,
        requests=args.requests,
        concurrency=args.concurrency,
        max_tokens=args.max_tokens,
    )
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
