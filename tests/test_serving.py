"""Serving: the real CPU vLLM server with the default model, and the client's error paths."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.procs import die_with_parent
from pipeline.serving import cpus
from pipeline.serving.client import ChatClient, ModelNotFound, Sampling
from pipeline.serving.config import VllmModelConfig, load_model_config, model_config
from pipeline.serving.cpus import available_cpus, bind_env, cgroup_cpu_quota
from pipeline.serving.models import vllm_venv
from pipeline.serving.server import (
    ExternalEndpoint,
    ManagedServer,
    free_port,
    group_members,
    open_endpoint,
)
from tests.conftest import require

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it, from /proc (children may leave the group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo.extend(children.get(p, []))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedServer]:
    """The default model's managed server, started once for this module, from scratch."""
    require(
        (vllm_venv() / "bin" / "python").exists(),
        f"the CPU vLLM venv {vllm_venv()} is missing; run make setup",
    )
    data = tmp_path_factory.mktemp("serving")
    endpoint = open_endpoint(load_model_config("smollm2"), data)
    assert isinstance(endpoint, ManagedServer)
    with endpoint:
        yield endpoint


@pytest.mark.integration
@pytest.mark.slow
def test_wrong_model_name_quotes_the_servers_404(server: ManagedServer) -> None:
    # Runs before the test below, which stops the module's server to check the cleanup.
    assert server.pid is not None

    async def ask():
        async with ChatClient(server.base_url, "no-such-model") as client:
            return await client.chat(QUESTION)

    # Our words (which model, which endpoint) and the server's ("... does not exist").
    with pytest.raises(
        ModelNotFound, match=r"HTTP 404.*'no-such-model'.*The model `no-such-model` does not exist"
    ):
        asyncio.run(ask())


@pytest.mark.integration
@pytest.mark.slow
def test_managed_server_chats_with_usage_and_leaves_no_process(server: ManagedServer) -> None:
    assert server.startup_s is not None and server.startup_s > 0
    assert server.log_path.is_file()
    # The engine decodes on every CPU this process may use, not vLLM's automatic one core
    # fewer: its log names the cores its OpenMP threads are bound to.
    bound = re.findall(r"local_rank=0, core ids=\[([\d, ]*)\]", server.log_path.read_text())
    assert bound and [int(c) for c in bound[-1].split(",")] == available_cpus(
        None, quota=cgroup_cpu_quota()
    )
    pgid = server.pgid
    assert pgid is not None
    tree = _descendants(pgid)
    assert len(group_members(pgid)) >= 2  # the API server and its engine core

    async def ask():
        async with ChatClient.for_endpoint(server) as client:
            return await client.chat(QUESTION, sampling=Sampling(max_tokens=32))

    result = asyncio.run(ask())
    # Greedy decoding of a correctly converted model; garbled weights would not say this.
    assert "Paris" in result.text
    assert result.prompt_tokens > 0
    assert 0 < result.completion_tokens <= 32
    assert result.tokens_per_s > 0
    assert 0 < result.ttft_s <= result.latency_s

    server.stop()
    assert group_members(pgid) == []
    assert [p for p in tree if _alive(p)] == []
    server.stop()  # idempotent


def test_dead_endpoint_is_environment_failure_quickly() -> None:
    port = free_port()  # nothing listens on it once the probe socket is closed

    async def ask():
        async with ChatClient(f"http://127.0.0.1:{port}/v1", "m", backoff_s=0.05) as client:
            return await client.chat(QUESTION)

    started = time.perf_counter()
    with pytest.raises(EnvironmentFailure, match=rf"cannot reach .*127\.0\.0\.1:{port}"):
        asyncio.run(ask())
    assert time.perf_counter() - started < 5


class _NotFound(BaseHTTPRequestHandler):
    """Answers every POST like vLLM does for an unknown model."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(
            {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError",
                       "param": "model", "code": 404}}
        ).encode()  # fmt: skip
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_wrong_model_name_is_a_config_error_with_the_server_message() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:

        async def ask():
            url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
            async with ChatClient(url, "nope") as client:
                return await client.chat(QUESTION)

        with pytest.raises(ConfigError, match=r"does not serve model 'nope'.*does not exist"):
            asyncio.run(ask())
    finally:
        httpd.shutdown()
        httpd.server_close()


# A stand-in for the engine venv's python: answers GET /v1/models like vLLM, with a child
# process standing in for the engine core; or exits early, as FAKE_VLLM says.
FAKE_VLLM = """
import http.server, json, os, subprocess, sys
args = {flag: value for flag, value in zip(sys.argv, sys.argv[1:]) if flag.startswith("--")}
if os.environ.get("FAKE_VLLM") == "crash":
    print("RuntimeError: no engine for you", flush=True)
    sys.exit(7)
name = args["--served-model-name"]
class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": name}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
try:
    httpd = http.server.HTTPServer((args["--host"], int(args["--port"])), Models)
except OSError as err:
    print(f"OSError: {err}", flush=True)
    sys.exit(1)
subprocess.Popen(["sleep", "300"])
httpd.serve_forever()
"""


@pytest.fixture
def fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "fake_vllm.py").write_text(FAKE_VLLM)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec /usr/bin/python3 {venv / "fake_vllm.py"} "$@"\n')
    python.chmod(0o755)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return venv


def test_server_lifecycle_retries_a_taken_port_and_stops_the_group(
    fake_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.serving import server as server_module

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        ports = iter([busy.getsockname()[1]])
        real_free_port = server_module.free_port
        monkeypatch.setattr(
            server_module, "free_port", lambda h: next(ports, None) or real_free_port(h)
        )
        with ManagedServer(tmp_path / "model", "fake", log_dir=tmp_path, venv=fake_venv) as srv:
            assert srv.port != busy.getsockname()[1]
            pgid = srv.pgid
            assert pgid is not None and len(group_members(pgid)) == 2
            tree = _descendants(pgid)
    assert group_members(pgid) == []
    assert [p for p in tree if _alive(p)] == []
    assert "Address already in use" in (tmp_path / "fake.log").read_text()


def test_server_that_exits_before_ready_quotes_the_log(
    fake_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_VLLM", "crash")
    srv = ManagedServer(tmp_path / "model", "fake", log_dir=tmp_path, venv=fake_venv)
    with pytest.raises(EnvironmentFailure, match=r"exited with code 7(.|\n)*no engine for you"):
        srv.start()
    assert srv.pid is None


def test_missing_engine_venv_names_the_fix(tmp_path: Path) -> None:
    server = ManagedServer(tmp_path, "m", log_dir=tmp_path, venv=tmp_path / "no-venv")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EnvironmentFailure, match=r"no-venv/bin/python.*make setup"):
        server.start()
    assert server.pid is None


def test_external_endpoint_needs_its_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = VllmModelConfig(
        endpoint="external", base_url="http://127.0.0.1:1/v1", api_key_env="NETGAUGE_TEST_KEY"
    )
    endpoint = open_endpoint(cfg, "unused")
    monkeypatch.delenv("NETGAUGE_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"NETGAUGE_TEST_KEY"):
        _ = endpoint.api_key
    monkeypatch.setenv("NETGAUGE_TEST_KEY", "k")
    assert endpoint.api_key == "k"
    assert endpoint.model == cfg.served_name


def test_model_config_file_matches_the_schema() -> None:
    cfg = load_model_config("smollm2")
    assert (cfg.name, cfg.kind, cfg.endpoint) == ("smollm2", "vllm_cpu", "managed")
    with pytest.raises(ConfigError, match=r"model.dtype='fp8'.*bfloat16, float16, float32"):
        model_config({"dtype": "fp8"})
    with pytest.raises(ConfigError, match=r"model\.max_tokenz"):
        model_config({"max_tokenz": 5})
    with pytest.raises(ConfigError, match=r"model.base_url is required"):
        model_config({"endpoint": "external"})


def test_engine_env_drops_workflow_thread_counts(monkeypatch):
    """Snakemake exports OMP_NUM_THREADS & co. to jobs; vLLM must not inherit them."""
    from pipeline.serving.models import THREAD_VARS, engine_env

    for name in THREAD_VARS:
        monkeypatch.setenv(name, "2")
    monkeypatch.setenv("NETGAUGE_MARKER", "kept")
    env = engine_env()
    assert not set(THREAD_VARS) & set(env)
    assert env["NETGAUGE_MARKER"] == "kept" and env["HF_HUB_OFFLINE"] == "1"


# A broken or hostile OpenAI-compatible endpoint: each body is what it streams back.
HOSTILE_STREAMS = {
    "not json": (b"data: {nope\n\n", "not a JSON object"),
    "a list": (b"data: [1, 2]\n\n", "not a JSON object"),
    "error event": (b'data: {"error": {"message": "engine died"}}\n\n', "engine died"),
    "no newline ever": (b"data: " + b"x" * (9 << 20), "longer than"),
    "endless text": (
        b"".join(
            b'data: {"choices": [{"delta": {"content": "' + b"y" * 65536 + b'"}}]}\n\n'
            for _ in range(70)
        ),
        "more than 4194304 characters",
    ),
}


class _Hostile(BaseHTTPRequestHandler):
    body = b""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


def _ask(handler: type[BaseHTTPRequestHandler]):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:

        async def ask():
            url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
            async with ChatClient(url, "m") as client:
                return await client.chat(QUESTION)

        return asyncio.run(ask())
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("case", sorted(HOSTILE_STREAMS))
def test_hostile_endpoint_is_an_environment_failure(case: str) -> None:
    body, needle = HOSTILE_STREAMS[case]
    handler = type("H", (_Hostile,), {"body": body})
    with pytest.raises(EnvironmentFailure, match=needle):
        _ask(handler)


def test_odd_shapes_in_a_stream_are_ignored_not_crashes() -> None:
    events = [
        {"choices": "not a list"},
        {"choices": [None, 3, {"delta": "x"}, {"delta": {"content": 42}}]},
        {"choices": [{"delta": {"content": "ok \ud800"}, "finish_reason": 7}]},
        {"usage": {"prompt_tokens": "9", "completion_tokens": 2}},
    ]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    huge = b"7" * 4301  # past Python's int() limit: still JSON, and no count (issue 26)
    usage = b'{"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens": ' + huge + b"}}"
    body += b"data: " + usage + b"\n\n"
    result = _ask(type("H", (_Hostile,), {"body": body + b"data: [DONE]\n\n"}))
    assert result.text == "ok \ud800"
    assert (result.prompt_tokens, result.completion_tokens) == (0, 2)
    assert result.finish_reason is None


def test_a_lone_surrogate_in_the_history_is_sent_escaped() -> None:
    """A model's earlier reply may hold a lone surrogate; sending it back must not fail."""
    seen: list[bytes] = []

    class Echo(_Hostile):
        body = (
            b'data: {"choices": [{"delta": {"content": "ok"}}]}\n\n'
            b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n\n'
            b"data: [DONE]\n\n"
        )

        def do_POST(self) -> None:
            seen.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(self.body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:

        async def ask():
            url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
            async with ChatClient(url, "m") as client:
                history = [{"role": "assistant", "content": "bad \ud800 reply"}, *QUESTION]
                return await client.chat(history)

        assert asyncio.run(ask()).text == "ok"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert json.loads(seen[0])["messages"][0]["content"] == "bad \\ud800 reply"


def test_extra_headers_are_sent_and_secret_ones_come_from_the_environment(monkeypatch) -> None:
    from pipeline.llm.models import ModelPool

    seen_headers: list[dict[str, str]] = []

    class Recording(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen_headers.append(dict(self.headers))
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(
                b'data: {"choices": [{"delta": {"content": "ok"}}]}\n\n'
                b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
                b"\n\ndata: [DONE]\n\n"
            )

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    cfg = model_config(
        {
            "endpoint": "external",
            "base_url": base,
            "headers": {"X-Team": "netops"},
            "headers_env": {"X-Api-Key": "NETGAUGE_TEST_HEADER"},
        }
    )
    try:
        missing = pytest.raises(ConfigError, match=r"NETGAUGE_TEST_HEADER .* is not set")
        with ModelPool("data") as pool, missing:
            pool.backend(cfg)
        monkeypatch.setenv("NETGAUGE_TEST_HEADER", "s3cret")
        with ModelPool("data") as pool:
            assert pool.backend(cfg).chat([{"role": "user", "content": "hi"}]).text == "ok"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert seen_headers[0]["X-Team"] == "netops" and seen_headers[0]["X-Api-Key"] == "s3cret"


def test_the_cpu_binding_follows_the_affinity_the_quota_and_the_jobs_threads(tmp_path, monkeypatch):
    assert available_cpus(None, affinity={3, 1, 2, 0}) == [0, 1, 2, 3]
    assert available_cpus(None, affinity={0, 1, 2, 3}, quota=2.5) == [0, 1]
    assert available_cpus(None, affinity={0, 1}, quota=0.2) == [0]  # at least one
    assert available_cpus("3", affinity={4, 5, 6, 7}) == [4, 5, 6]  # Snakemake's threads
    assert available_cpus("0", affinity={0, 1}) == [0, 1]  # unset or nonsense: no cut
    # The quota is read from the process's own cgroup, v2 and v1 alike.
    proc = tmp_path / "cgroup"
    monkeypatch.setattr(cpus, "CGROUP_ROOT", tmp_path / "fs")
    (tmp_path / "fs" / "jobs" / "j1").mkdir(parents=True)
    (tmp_path / "fs" / "jobs" / "j1" / "cpu.max").write_text("150000 100000\n")
    proc.write_text("0::/jobs/j1\n")
    assert cgroup_cpu_quota(proc) == 1.5
    (tmp_path / "fs" / "jobs" / "j1" / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(proc) is None
    (tmp_path / "fs" / "cpu,cpuacct" / "slurm").mkdir(parents=True)
    (tmp_path / "fs" / "cpu,cpuacct" / "slurm" / "cpu.cfs_quota_us").write_text("300000")
    (tmp_path / "fs" / "cpu,cpuacct" / "slurm" / "cpu.cfs_period_us").write_text("100000")
    proc.write_text("4:memory:/x\n2:cpu,cpuacct:/slurm\n")
    assert cgroup_cpu_quota(proc) == 3.0
    # The variable the engine reads, and the modes a model config may name instead.
    assert bind_env("auto") == {"VLLM_CPU_OMP_THREADS_BIND": "auto"}
    assert bind_env("0-3") == {"VLLM_CPU_OMP_THREADS_BIND": "0-3"}
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda: None)
    own = sorted(os.sched_getaffinity(0))
    assert bind_env("available", {"OMP_NUM_THREADS": "1"}) == {
        "VLLM_CPU_OMP_THREADS_BIND": str(own[0])
    }
    with pytest.raises(ConfigError, match=r"model.cpu_bind='all cores' is not allowed"):
        model_config({"cpu_bind": "all cores"})


class _DiesWithItsStarter(ExternalEndpoint):
    """An endpoint whose 'server' is a real process started as ManagedServer starts vLLM:
    with PR_SET_PDEATHSIG, so it dies with the thread that entered the endpoint."""

    proc: subprocess.Popen | None = None

    def __enter__(self) -> _DiesWithItsStarter:
        proc = subprocess.Popen(["sleep", "300"], preexec_fn=die_with_parent)
        object.__setattr__(self, "proc", proc)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait()


def test_a_server_first_asked_for_on_a_short_lived_thread_lives_as_long_as_the_pool(
    monkeypatch,
) -> None:
    """run_model's cells and the repair chain's master model ask for a backend from
    threads that end before the pool does; the server must not die with them."""
    from pipeline.llm import models
    from pipeline.llm.models import ModelPool

    started: list[_DiesWithItsStarter] = []

    def fake_open(cfg, data_dir, **kw):
        endpoint = _DiesWithItsStarter("http://127.0.0.1:9/v1", cfg.served_name)
        started.append(endpoint)
        return endpoint

    monkeypatch.setattr(models, "open_endpoint", fake_open)
    cfg = model_config({"endpoint": "external", "base_url": "http://127.0.0.1:9/v1"})
    with ModelPool("data") as pool:
        asker = threading.Thread(target=pool.backend, args=(cfg,))
        asker.start()
        asker.join()
        time.sleep(0.5)  # a death signal would have been delivered by now
        assert started[0].proc.poll() is None, "the server died with the thread that asked"
    assert started[0].proc.poll() is not None  # stopped with the pool
