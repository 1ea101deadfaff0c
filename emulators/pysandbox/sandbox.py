"""`GraphSandbox`: the parent's handle on one zygote process per base graph.

Files (one private temp dir per sandbox, removed on exit):
    netgauge-sandbox-*/config.pickle   base graph + limits for the zygote (our own data);
                                       written per zygote start, deleted by the zygote
    netgauge-sandbox-*/jail/           empty, read-only chroot of every child (root only)
    netgauge-sandbox-*/zygote.log      the zygote's stderr, quoted in ENV_ERROR results
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

import networkx as nx

from emulators.pysandbox import kernel, protocol
from emulators.pysandbox.limits import SandboxLimits
from emulators.pysandbox.result import SandboxResult, env_error, interpret
from pipeline import cgroup
from pipeline.core import StepStatus
from pipeline.errors import ConfigError, EnvironmentFailure

_log = logging.getLogger(__name__)

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
_BOOT = (
    f"import sys; sys.path.insert(0, {_REPO_ROOT!r}); "
    "from emulators.pysandbox.zygote import main; sys.exit(main(sys.argv[1:]))"
)
# New network, pid, IPC and UTS namespaces; the zygote is the pid namespace's init, so
# when it dies the kernel kills every child, and --kill-child ties it to unshare.
_UNSHARE_ARGS = ("--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child")
# Nothing from our environment (API keys, tokens) may reach a process that forks agent code.
_ZYGOTE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
_NOBODY = 65534
_CHILD_TASKS = 4  # the child alone (it cannot fork); a little slack
_READY_TIMEOUT_S = 60.0
_ANSWER_GRACE_S = 10.0  # on top of the wall timeout: kill, reap and forward the report
_STOP_TIMEOUT_S = 2.0
_ENVELOPE_SLACK = 1 << 16


def _has_root() -> bool:
    return os.geteuid() == 0


def _log_tail(path: Path, chars: int = 600) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return " ".join(text[-chars:].split())


class _Zygote:
    """One running zygote process and its two protocol pipes."""

    def __init__(self, command: list[str], log_path: Path) -> None:
        self._log_path = log_path
        with log_path.open("ab") as log:
            try:
                self.proc = self._spawn(command, log)
            except OSError as exc:
                raise EnvironmentFailure(f"cannot start the sandbox zygote: {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._to_fd = self.proc.stdin.fileno()
        self._from_fd = self.proc.stdout.fileno()
        try:
            frame = protocol.read_frame(self._from_fd, 4096, time.monotonic() + _READY_TIMEOUT_S)
            if frame is None:
                raise EnvironmentFailure("the sandbox zygote exited during start-up")
            ready = json.loads(frame)
            self.pid = int(ready["pid"])
        except (EnvironmentFailure, ValueError, KeyError, TypeError) as exc:
            self.stop()
            raise EnvironmentFailure(f"{exc}: {self.death_reason()}") from exc

    @staticmethod
    def _spawn(command: list[str], log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=_ZYGOTE_ENV,
            close_fds=True,
            start_new_session=True,  # a terminal's Ctrl-C reaches us, not the zygote
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def death_reason(self) -> str:
        code = self.proc.poll()
        state = "still running" if code is None else f"exit status {code}"
        return f"zygote {state}; log: {_log_tail(self._log_path) or '(empty)'}"

    def request(self, code: str, deadline: float, report_limit: int) -> tuple[dict, bytes]:
        try:
            protocol.write_frame(self._to_fd, json.dumps({"code": code}).encode())
        except OSError as exc:
            raise EnvironmentFailure(f"the sandbox zygote is gone ({exc})") from exc
        header = protocol.read_frame(self._from_fd, 1 << 16, deadline)
        report = protocol.read_frame(self._from_fd, report_limit, deadline)
        if header is None or report is None:
            raise EnvironmentFailure("the sandbox zygote died during the run")
        try:
            return json.loads(header), report
        except ValueError as exc:
            raise EnvironmentFailure(f"the sandbox zygote sent a bad header: {exc}") from exc

    def stop(self) -> None:
        """Say goodbye and close stdin; kill the zygote if it does not go in time.

        Without the goodbye, a zygote takes end-of-input as its parent's death and removes
        the temp dir itself.
        """
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(OSError):  # already gone: the wait below says how
            protocol.write_frame(self._to_fd, b'{"stop": true}')
        self.proc.stdin.close()
        try:
            self.proc.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # unshare --kill-child / PDEATHSIG take the zygote with it
            self.proc.wait()
        self.proc.stdout.close()


class _Resources:
    """What a GraphSandbox owns, kept apart so a finalizer can free it without the sandbox."""

    def __init__(self) -> None:
        self.tmpdir: Path | None = None
        self.zygote: _Zygote | None = None
        self.cgroup: cgroup.MemoryCgroup | None = None

    def stop_zygote(self) -> None:
        zygote, self.zygote = self.zygote, None
        if zygote is not None:
            zygote.stop()

    def close(self) -> None:
        self.stop_zygote()
        group, self.cgroup = self.cgroup, None
        if group is not None:
            group.remove()
        tmpdir, self.tmpdir = self.tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir)


class GraphSandbox:
    """Runs agent code `process_graph(graph)` against one base graph, one child per run.

    Use as a context manager; `run` never raises for anything the agent's code does.
    """

    def __init__(
        self,
        graph: nx.DiGraph,
        limits: SandboxLimits | None = None,
        *,
        entry: str = "process_graph",
        audit_hook: bool = True,
    ) -> None:
        """`audit_hook=False` leaves out the audit hook, and only it: the hostile suites use
        it to show that the kernel layers hold on their own."""
        self.limits = limits if limits is not None else SandboxLimits()
        _check_limits(self.limits)
        if not entry.isidentifier():
            raise ConfigError(f"entry must be a Python identifier, got {entry!r}")
        self._graph = graph
        self._entry = entry
        self._audit_hook = audit_hook
        self._privileged = _has_root()
        self._seccomp = kernel.seccomp_supported()
        self._cgroup = self._privileged and cgroup.available()
        self.isolation = _describe_isolation(self._privileged, self._seccomp, self._cgroup)
        if not audit_hook:
            self.isolation = self.isolation.replace("+audit", "") + " (audit hook left out)"
        self._resources = _Resources()
        self._finalizer = weakref.finalize(self, self._resources.close)
        self._starts = 0
        self._config = b""

    def __enter__(self) -> GraphSandbox:
        if self._resources.zygote is None:
            self._start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the zygote (and so any child) and remove the temp dir; safe to call twice."""
        self._resources.close()

    @property
    def pids(self) -> list[int]:
        """Host pids of the running launcher and zygote (empty when stopped)."""
        zygote = self._resources.zygote
        return sorted({zygote.proc.pid, zygote.pid}) if zygote is not None else []

    def run(self, code: str) -> SandboxResult:
        """Run `code` (which must define the entry function) once against the base graph."""
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > self.limits.code_bytes:
            reason = f"the code is {size} bytes, over the limit of {self.limits.code_bytes}"
            return SandboxResult(StepStatus.EXEC_ERROR, None, "", reason, 0.0)
        report_limit = 1 + self.limits.result_bytes + 6 * self.limits.output_bytes
        deadline = time.monotonic() + self.limits.wall_timeout_s + _ANSWER_GRACE_S
        try:
            zygote = self._running_zygote()
            header, report = zygote.request(code, deadline, report_limit + _ENVELOPE_SLACK)
        except EnvironmentFailure as exc:
            zygote = self._resources.zygote
            reason = f"{exc} ({zygote.death_reason()})" if zygote is not None else str(exc)
            _log.warning("sandbox run failed, zygote will restart: %s", reason)
            self._resources.stop_zygote()
            return env_error(reason)
        return interpret(header, report, self.limits)

    def _running_zygote(self) -> _Zygote:
        zygote = self._resources.zygote
        if zygote is not None and not zygote.alive():
            _log.warning("sandbox zygote died between runs (%s)", zygote.death_reason())
            self._resources.stop_zygote()
            zygote = None
        if zygote is None:
            zygote = self._start()
        return zygote

    def _start(self) -> _Zygote:
        if self._starts:
            _log.warning("restarting the sandbox zygote (start number %d)", self._starts + 1)
        self._starts += 1
        resources = self._resources
        if self._cgroup and resources.cgroup is None:
            memory = self.limits.memory_mb << 20
            resources.cgroup = cgroup.MemoryCgroup.create("pysandbox", memory, pids=_CHILD_TASKS)
        if resources.tmpdir is None:
            resources.tmpdir = Path(tempfile.mkdtemp(prefix="netgauge-sandbox-"))
            jail = resources.tmpdir / "jail"
            jail.mkdir()
            jail.chmod(0o555)  # owned by root: the dropped uid can neither write nor create here
            # Pickled once, so a restarted zygote gets the same base even if the caller
            # has since mutated the graph object.
            self._config = pickle.dumps(self._config_for(jail), pickle.HIGHEST_PROTOCOL)
        config_path = resources.tmpdir / "config.pickle"  # the zygote deletes it once read
        config_path.write_bytes(self._config)
        command = [sys.executable, "-I", "-B", "-c", _BOOT, str(config_path)]
        if self._privileged:
            unshare = shutil.which("unshare", path=_ZYGOTE_ENV["PATH"])
            if unshare is None:
                raise EnvironmentFailure(
                    "running as root but util-linux 'unshare' is missing: no network isolation"
                )
            command = [unshare, *_UNSHARE_ARGS, *command]
        resources.zygote = _Zygote(command, resources.tmpdir / "zygote.log")
        return resources.zygote

    def _config_for(self, jail: Path) -> dict[str, Any]:
        return {
            **asdict(self.limits),
            "graph": self._graph,
            "entry": self._entry,
            "audit_hook": self._audit_hook,
            "jail": str(jail) if self._privileged else None,
            "uid": _NOBODY,
            "gid": _NOBODY,
            "seccomp": self._seccomp,
            "cgroup": self._resources.cgroup.procs_files if self._resources.cgroup else [],
        }


def _describe_isolation(privileged: bool, seccomp: bool, memory_cgroup: bool) -> str:
    layers = ["netns", "pidns", "chroot", "setuid"] if privileged else []
    layers += ["cgroup"] if memory_cgroup else []
    layers += ["seccomp"] if seccomp else []
    layers += ["rlimits", "audit"]
    notes = [] if privileged else ["not root: no netns/pidns/chroot/setuid/cgroup"]
    if privileged and not memory_cgroup:
        notes.append("no memory cgroup: no writable cgroup hierarchy")
    if not seccomp:
        why = kernel.CONFINE_MISSING if not kernel.available() else "needs x86-64 with seccomp"
        notes.append(f"no seccomp: {why}")
    return "+".join(layers) + (f" ({'; '.join(notes)})" if notes else "")


def _check_limits(limits: SandboxLimits) -> None:
    for name, value in asdict(limits).items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"SandboxLimits.{name} must be a positive number, got {value!r}")
