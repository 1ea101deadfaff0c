"""RouterDaemons.answer: the environment's own FRR reads over kept-open vty sessions, each
line to the daemon that alone answers it, and vtysh for whatever they cannot answer as
vtysh would. A stand-in daemon speaks the vty protocol on a Unix socket (no FRR needed);
tests/test_netlab_live.py compares answers with vtysh's on real daemons."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from generators.lab.frr import daemons
from generators.lab.frr.daemons import RouterDaemons, owner
from pipeline.errors import EnvironmentFailure


def _daemon(path: Path, answers: dict[str, tuple[int, str]], seen: list[str]) -> socket.socket:
    """A vty socket answering each line (NUL-terminated) with answers[line] (default:
    success, no output), then three NULs and the code."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            buf = b""
            while chunk := conn.recv(4096):
                buf += chunk
                while b"\0" in buf:
                    line, buf = buf.split(b"\0", 1)
                    seen.append(line.decode())
                    code, out = answers.get(line.decode(), (0, ""))
                    conn.sendall(out.encode() + b"\0\0\0" + bytes([code]))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.fixture
def group(tmp_path, monkeypatch):
    monkeypatch.setattr(daemons, "BASE", tmp_path)
    g = RouterDaemons("lab", ["r1", "r2"], ["zebra", "ospfd", "bgpd"], lambda r: "")
    calls: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def vtysh_all(routers, commands, timeout_s=10.0):
        calls.append((tuple(routers), tuple(commands)))
        return {r: f"vtysh:{r}" for r in routers}

    monkeypatch.setattr(g, "vtysh_all", vtysh_all)
    g.calls = calls
    yield g
    g.vty.close()


def _serve(g: RouterDaemons, router: str, daemon: str, answers: dict[str, tuple[int, str]]):
    g.vty_dir(router).mkdir(parents=True, exist_ok=True)
    seen: list[str] = []
    server = _daemon(g.vty_dir(router) / f"{daemon}.vty", answers, seen)
    return server, seen


def test_owner_names_the_one_daemon_or_none():
    assert owner("show ip ospf neighbor json") == "ospfd"
    assert owner("show bgp summary json") == "bgpd"
    assert owner("clear bgp 10.0.0.1") == "bgpd"
    assert owner("show running-config") is None
    assert owner("show ip route") is None  # zebra's, but not routed here: vtysh answers


def test_lines_go_to_their_daemons_and_come_back_in_order(group):
    servers = [
        _serve(group, r, d, {line: (0, f"{r}:{d}:{line};")})
        for r in ("r1", "r2")
        for d, line in (("ospfd", "show ip ospf neighbor json"), ("bgpd", "show bgp summary json"))
    ]
    lines = ["show ip ospf neighbor json", "show bgp summary json"]
    out = group.answer({"r1": lines, "r2": lines[::-1]})
    assert out == {
        "r1": "r1:ospfd:show ip ospf neighbor json;r1:bgpd:show bgp summary json;",
        "r2": "r2:bgpd:show bgp summary json;r2:ospfd:show ip ospf neighbor json;",
    }
    assert group.calls == []
    # one session per daemon, `enable` once, then only its own line
    assert [seen for _, seen in servers] == [["enable", line] for line in lines * 2]
    for server, _ in servers:
        server.close()


def test_what_the_sessions_cannot_answer_as_vtysh_goes_to_vtysh(group):
    ospf, _ = _serve(group, "r1", "ospfd", {"show ip ospf neighbor json": (1, "% warn\n")})
    bgp, _ = _serve(group, "r1", "bgpd", {"show bgp summary json": (2, "% error\n")})
    # a warning is answered (vtysh goes on after it); an error is vtysh's to report
    assert group.answer({"r1": ["show ip ospf neighbor json"]}) == {"r1": "% warn\n"}
    assert group.answer({"r1": ["show bgp summary json"]}) == {"r1": "vtysh:r1"}
    # a line no single daemon answers, and a router whose daemon is not running
    assert group.answer({"r1": ["show running-config"]}) == {"r1": "vtysh:r1"}
    assert group.answer({"r2": ["show ip ospf neighbor json"]}) == {"r2": "vtysh:r2"}
    assert group.calls == [
        (("r1",), ("show bgp summary json",)),
        (("r1",), ("show running-config",)),
        (("r2",), ("show ip ospf neighbor json",)),
    ]
    ospf.close()
    bgp.close()


def test_a_vtysh_failure_still_raises(group, monkeypatch):
    def failing(routers, commands, timeout_s=10.0):
        raise EnvironmentFailure(f"vtysh on {routers[0]} exited 1 for {commands}")

    monkeypatch.setattr(group, "vtysh_all", failing)
    with pytest.raises(EnvironmentFailure, match="vtysh on r1 exited 1"):
        group.answer({"r1": ["show ip ospf neighbor json"]})
