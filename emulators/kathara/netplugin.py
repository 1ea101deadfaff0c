"""A local stand-in for Kathará's network plugin (`kathara/katharanp`): Docker's remote
network-driver protocol (JSON over HTTP on a unix socket), standard library only.

It runs inside the managed plugin's rootfs (host network, CAP_NET_ADMIN) and so works in
the root namespace. Naming scheme: a collision domain (a Docker network) is a Linux
bridge `kt<first 12 of its network id>`; an endpoint is a veth pair `kv<11 of endpoint
id>` (bridge side) / `kc<11>` (container side, which Docker moves into the device and
renames `eth<k>`). It adds no iptables rule anywhere and keeps no state: names derive
from the ids Docker passes, so a restarted plugin still deletes what an earlier one made.
"""

from __future__ import annotations

import json
import os
import signal
import socketserver
import subprocess
import sys
from http.server import BaseHTTPRequestHandler

SOCKET = "/run/docker/plugins/katharanp.sock"


def bridge_name(network_id: str) -> str:
    return "kt" + network_id[:12]


def veth_names(endpoint_id: str) -> tuple[str, str]:
    return "kv" + endpoint_id[:11], "kc" + endpoint_id[:11]


def ip(*argv: str, check: bool = True) -> None:
    proc = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {proc.stderr.strip()}")


def create_network(req: dict) -> dict:
    br = bridge_name(req["NetworkID"])
    ip("link", "del", br, check=False)
    # Bridge ageing 0 would flood like a hub; the default learns like a switch. No STP
    # (a collision domain is loop-free) so ports forward at once.
    ip("link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0")
    ip("link", "set", br, "up")
    return {}


def delete_network(req: dict) -> dict:
    ip("link", "del", bridge_name(req["NetworkID"]), check=False)
    return {}


def create_endpoint(req: dict) -> dict:
    outer, inner = veth_names(req["EndpointID"])
    ip("link", "del", outer, check=False)
    ip("link", "add", outer, "type", "veth", "peer", "name", inner)
    mac = (req.get("Interface") or {}).get("MacAddress")
    if mac:
        ip("link", "set", inner, "address", mac)
    ip("link", "set", outer, "master", bridge_name(req["NetworkID"]))
    ip("link", "set", outer, "up")
    return {}


def delete_endpoint(req: dict) -> dict:
    ip("link", "del", veth_names(req["EndpointID"])[0], check=False)
    return {}


def join(req: dict) -> dict:
    # No gateway service: otherwise Docker adds every device to its `docker_gwbridge`
    # (a bridge in the root namespace, an extra interface and a default route).
    return {
        "InterfaceName": {"SrcName": veth_names(req["EndpointID"])[1], "DstPrefix": "eth"},
        "DisableGatewayService": True,
    }


def _empty(_req: dict) -> dict:
    return {}


ROUTES = {
    "/Plugin.Activate": lambda _r: {"Implements": ["NetworkDriver"]},
    "/NetworkDriver.GetCapabilities": lambda _r: {"Scope": "local", "ConnectivityScope": "local"},
    "/NetworkDriver.CreateNetwork": create_network,
    "/NetworkDriver.DeleteNetwork": delete_network,
    "/NetworkDriver.CreateEndpoint": create_endpoint,
    "/NetworkDriver.DeleteEndpoint": delete_endpoint,
    "/NetworkDriver.EndpointOperInfo": lambda _r: {"Value": {}},
    "/NetworkDriver.Join": join,
    "/NetworkDriver.Leave": _empty,
    "/NetworkDriver.AllocateNetwork": _empty,
    "/NetworkDriver.FreeNetwork": _empty,
    "/NetworkDriver.DiscoverNew": _empty,
    "/NetworkDriver.DiscoverDelete": _empty,
    "/NetworkDriver.ProgramExternalConnectivity": _empty,
    "/NetworkDriver.RevokeExternalConnectivity": _empty,
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        route = ROUTES.get(self.path)
        try:
            req = json.loads(body or b"{}") or {}
            if route is None:
                raise KeyError(f"unknown call {self.path}")
            status, reply = 200, route(req)
        except (KeyError, ValueError, RuntimeError) as err:
            status, reply = 500, {"Err": str(err)}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.docker.plugins.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def address_string(self) -> str:
        return "docker"

    def log_message(self, fmt: str, *args: object) -> None:
        if "500" in str(args):
            sys.stderr.write(fmt % args + "\n")


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _exit(_sig: int, _frame: object) -> None:
    raise SystemExit(0)


def main(path: str = SOCKET) -> None:
    # PID 1 of the plugin's container: without a handler SIGTERM would be ignored and
    # dockerd would wait 10 s before killing it at every stop.
    signal.signal(signal.SIGTERM, _exit)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.unlink(path)
    with Server(path, Handler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:])
