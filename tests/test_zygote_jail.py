"""The persistent jail (emulators/zygote) is the one-shot bubblewrap jail, command for
command: the same probe run in both shows the same identity, capabilities, writable and
read-only places, mount options, host name and environment; the commands the hostile
suite sends past the argument check fail the same way; lab zygotes stop with their lab.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from emulators import process
from emulators.jail import Jail, library_binds
from emulators.netcmd import confine
from emulators.zygote import client
from emulators.zygote.client import Zygote
from emulators.zygote.spec import Root, Turn, encode
from pipeline import cgroup
from pipeline.errors import ConfigError, EnvironmentFailure
from tests import zygote_world as world
from tests.conftest import integration_fixture, require_emulator, require_root

PROGRAMS = (*world.PROGRAMS, "/usr/bin/cat")
RP_FILTER = "/proc/sys/net/ipv4/conf/all/rp_filter"
PROBE = f"""
cat /proc/self/status; echo "host=$(cat /proc/sys/kernel/hostname)"; id; env | sort
echo 0 > {RP_FILTER} && echo "write rp_filter"
echo 1 > /proc/sys/net/ipv4/ip_forward 2>/dev/null && echo "write ip_forward"
for d in / /etc /usr /usr/bin /usr/lib/x86_64-linux-gnu /dev /tmp /run /dev/shm /proc; do
  (echo x > $d/probe) 2>/dev/null && echo "write $d"; done
unshare -U /usr/bin/id >/dev/null 2>&1 && echo "user namespace made"
cat /proc/self/mountinfo; echo "top" $(ls -A /)
"""
STATUS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
          "NoNewPrivs", "Seccomp")  # fmt: skip
# Mounts that differ by design, not by what they let a command do: bubblewrap's /dev is
# a writable tmpfs of binds with a pty instance, the zygote's a read-only one of device
# nodes with a fresh /dev/shm; tc's folder is inside the library folder bound anyway.
OWN_MOUNTS = ("/dev", "/dev/shm", "/dev/pts", "/dev/null", "/dev/zero", "/dev/full",
              "/dev/random", "/dev/urandom", "/dev/tty",
              "/usr/lib/x86_64-linux-gnu/tc")  # fmt: skip


@pytest.fixture(scope="module")
@integration_fixture
def net():
    require_root("the jails need root")
    with world.netns() as fd:
        yield fd


def _observed(output: str) -> dict[str, object]:
    """What a probe showed, without what differs by design."""
    lines = output.splitlines()
    status = {k: v.strip() for k, _, v in (ln.partition(":") for ln in lines) if k in STATUS}
    mounts = {}
    for line in lines:
        parts = line.split()
        if " - " in line and len(parts) > 6 and parts[4] not in OWN_MOUNTS:
            # relatime is the kernel's; noexec on /proc only the zygote sets (stricter)
            options = ",".join(o for o in parts[5].split(",") if o not in ("relatime", "noexec"))
            mounts[parts[4]] = (options, line.split(" - ")[1].split()[0])
    facts = [
        ln for ln in lines if ln.startswith(("host=", "uid=", "write ", "user ", "PATH", "top"))
    ]
    return {"status": status, "mounts": mounts, "facts": facts}


def _unexplained(ours: dict, theirs: dict) -> list[str]:
    """The differences between the two probes that no design choice explains."""
    out = []
    mine, bwrap = ours["status"], theirs["status"]
    for key in STATUS:
        if key in ("CapBnd", "CapAmb"):  # ours holds no more than theirs: bounding set
            if int(mine[key], 16) & ~int(bwrap[key], 16):  # cut to the kept caps, no
                out.append(f"{key} {mine[key]} > {bwrap[key]}")  # ambient ones for root
        elif key == "Seccomp" and (mine[key], bwrap[key]) == ("2", "0"):
            continue  # ours denies the keyring calls (child.c: deny_keyrings), a filter more
        elif mine[key] != bwrap[key]:
            out.append(f"{key} {mine[key]} != {bwrap[key]}")
    for point in sorted(set(ours["mounts"]) | set(theirs["mounts"])):
        a, b = ours["mounts"].get(point), theirs["mounts"].get(point)
        if a == b:
            continue
        if a is None and point.startswith("/etc/") and b[0].startswith("ro,"):
            continue  # a small file the zygote copies into its read-only root
        if b is None and point.startswith("/proc/") and a[0].startswith("ro,"):
            continue  # a corner of /proc the zygote also covers read-only
        out.append(f"mount {point}: {a} != {b}")
    facts = set(ours["facts"]) ^ set(theirs["facts"])
    out += sorted(facts - {"write /dev"})  # bubblewrap's /dev is writable, ours is not
    return out


def _both(net: int, root: Root, oneshot: Jail, writes: tuple[str, ...] = ()):
    """The probe's output in the zygote jail of `root` and in `oneshot` (bubblewrap)."""
    zygote = Zygote(root, name="probe")
    try:
        ours = zygote.run(world.sh(root, PROBE, writes), net_fd=net, timeout_s=10,
                          output_bytes=1 << 20)  # fmt: skip
    finally:
        zygote.close()
    group = cgroup.MemoryCgroup.create("probe", root.memory_bytes, pids=root.pids)
    try:
        enter = ["nsenter", f"--net=/proc/{os.getpid()}/fd/{net}"]
        argv = [*enter, *oneshot.argv(["/usr/bin/dash", "-c", PROBE])]
        prefix = group.join_prefix() if group is not None else []
        proc = process.start([*prefix, *argv])
        theirs = process.collect(proc, argv, timeout_s=10, output_bytes=1 << 20)
    finally:
        if group is not None:
            group.remove()
    assert ours.exit_code is not None and theirs.exit_code is not None
    return _observed(ours.output), _observed(theirs.output)


def test_the_lab_jail_is_bubblewraps(net):
    writes = (RP_FILTER,)
    ours, theirs = _both(net, world.hostile_root(), confine.jail(PROGRAMS, writes), writes)
    assert ours["status"]["CapEff"] == "0000000000003000" and ours["status"]["NoNewPrivs"] == "1"
    assert "write rp_filter" in ours["facts"] and "write /tmp" in ours["facts"]
    assert "write ip_forward" not in ours["facts"] and "write /" not in ours["facts"]
    assert ours["mounts"]["/proc/irq"][0].startswith("ro,")  # bubblewrap covers it too
    assert _unexplained(ours, theirs) == []


def test_the_uid_jail_is_bubblewraps_and_makes_no_user_namespace(net):
    binds = [(p, p) for p in library_binds()]
    root = Root(ro_binds=tuple(binds), uid=65534, gid=65534, hostname="frr",
                tmpfs=("/tmp", "/run", "/dev/shm"), targets=(("d", "/proc"), ("d", "/tmp"),
                ("d", "/run")))  # fmt: skip
    oneshot = Jail(ro_binds=[*PROGRAMS, *binds], tmpfs=("/tmp", "/run"), uid=65534,
                   hostname="frr")  # fmt: skip
    ours, theirs = _both(net, world.hostile_root(root), oneshot)
    assert ours["status"]["Uid"].split() == ["65534"] * 4
    assert ours["status"]["CapBnd"] == "0" * 16 and "user namespace made" not in ours["facts"]
    assert "write /tmp" in ours["facts"]  # its tmpfs is the uid's, as bubblewrap's
    assert _unexplained(ours, theirs) == []


def test_commands_past_the_check_fail_in_the_zygote_as_in_bubblewrap(net):
    """tests/test_netcmd_hostile.py's jail cases, in the lab's persistent jail."""
    lwt = Path("/proc/sys/net/netfilter/nf_hooks_lwtunnel").read_text().strip()
    refused = {
        "lwtunnel": ["/usr/sbin/sysctl", "-w", f"net.netfilter.nf_hooks_lwtunnel={lwt}"],
        "rp_filter not asked for": ["/usr/sbin/sysctl", "-w", "net.ipv4.conf.all.rp_filter=0"],
        "shadow": ["/usr/bin/cat", "/etc/shadow"],
        "root": ["/usr/bin/cat", "/root/.bashrc"],
        "netns": ["/usr/sbin/ip", "netns", "add", "evil"],
        "other namespace": ["/usr/sbin/ip", "-n", "root", "link"],
        "modprobe": ["/usr/sbin/iptables", "--modprobe=/bin/sh", "-t", "evil", "-L"],
    }
    zygote = Zygote(confine.lab_root(), name="refused")
    try:
        for case, argv in refused.items():
            got = zygote.run(confine.lab_turn(argv), net_fd=net, timeout_s=3, output_bytes=8192)
            assert got.exit_code not in (0, None), (case, got.output)
        allowed = confine.lab_turn(refused["rp_filter not asked for"], (RP_FILTER,))
        assert zygote.run(allowed, net_fd=net, timeout_s=3, output_bytes=8192).exit_code == 0
        up = confine.lab_turn(["/usr/sbin/ip", "link", "set", "lo", "up"])
        assert zygote.run(up, net_fd=net, timeout_s=3, output_bytes=8192).exit_code == 0
        ping = ["/usr/bin/ping", "-c", "50", "-i", "0.2", "127.0.0.1"]
        hung = zygote.run(confine.lab_turn(ping), net_fd=net, timeout_s=1, output_bytes=8192)
        assert hung.timed_out and world.running("ping -c 50 -i 0.2 127") == []
    finally:
        zygote.close()


@pytest.mark.integration
def test_lab_zygotes_run_on_the_lab_and_stop_with_it():
    require_emulator("mininet")
    from emulators.mininet.emulator import MininetEmulator
    from emulators.netcmd.sandbox import CommandSandbox, Status
    from generators.routing.topology import RoutingTopology

    topo = RoutingTopology(2, 1)
    with MininetEmulator() as emu:
        emu.build(topo.lab())
        sandbox = CommandSandbox(emu, topo.machines, switches=topo.switches)
        got = sandbox.run("r0", "ip -br addr")
        assert got.status is Status.OK and "r0-eth1" in got.output
        (zygote,) = emu._zygotes.values()
        jailed = world.family(zygote.pid)
        assert len(jailed) >= 3  # waiter, zygote, the next command's child
        emu.stop()
        assert world.gone_within(jailed, 5) and emu._zygotes == {}
        assert MininetEmulator.leftovers(emu.prefix) == []


def test_a_replaced_source_restarts_the_jail_and_a_folder_changed_inside_does_not(net, tmp_path):
    """A lab's life rewrites what is inside the folders its jail stages (a service's or
    router's folder emptied, a subfolder made anew, a file replaced by rename): the next
    command sees it, through the same zygote. A source replaced (the folder made anew
    under its path, a bound binary upgraded by rename) restarts the zygote, whose next
    command gets the new one."""
    svc, tool = tmp_path / "svc", tmp_path / "tool"
    (svc / "run").mkdir(parents=True)
    (svc / "run" / "state").write_text("one\n")
    tool.write_text("#!/usr/bin/dash\necho tool-1\n")
    tool.chmod(0o755)
    base = world.hostile_root()
    root = dataclasses.replace(
        base,
        ro_binds=(*base.ro_binds, (str(tool), "/opt/ng/tool")),
        stages=(*base.stages, (str(svc), "svc")),
        targets=(*base.targets, ("d", "/srv")),
    )
    shown = world.sh(root, "cat /srv/run/state; /opt/ng/tool")
    turn = dataclasses.replace(shown, binds=(*shown.binds, ("svc", "/srv")))
    zygote = Zygote(root, name="sources")
    try:

        def run() -> str:
            got = zygote.run(turn, net_fd=net, timeout_s=10, output_bytes=4096)
            assert got.exit_code == 0, got.output
            return got.output

        assert run() == "one\ntool-1\n"
        shutil.rmtree(svc / "run")  # the service reconfigured: its folder emptied, made anew
        (svc / "run").mkdir()
        (svc / "run" / "state.new").write_text("two\n")
        (svc / "run" / "state.new").rename(svc / "run" / "state")
        assert run() == "two\ntool-1\n" and zygote.starts == 1
        svc.rename(tmp_path / "svc.old")  # the folder itself is now another folder
        (svc / "run").mkdir(parents=True)
        (svc / "run" / "state").write_text("three\n")
        assert run() == "three\ntool-1\n" and zygote.starts == 2
        upgraded = tmp_path / "tool.new"  # the binary upgraded as dpkg does: by rename
        upgraded.write_text("#!/usr/bin/dash\necho tool-2\n")
        upgraded.chmod(0o755)
        upgraded.rename(tool)
        assert run() == "three\ntool-2\n" and zygote.starts == 3
        assert run() == "three\ntool-2\n" and zygote.starts == 3
    finally:
        zygote.close()


# -- the messages (no root needed) ----------------------------------------------------------
def test_messages_say_what_the_jail_is_and_refuse_what_cannot_be_said():
    root = Root(ro_binds=(("/usr/lib64", "/usr/lib64"),), stages=(("/usr/bin", "b"),),
                targets=(("f", "/usr/bin/ip"),), caps=("CAP_NET_ADMIN", "CAP_NET_RAW"))  # fmt: skip
    tokens = root.message().split(b"\0")
    assert tokens[0] == b"root" and b"caps" in tokens
    assert tokens[tokens.index(b"caps") + 1] == b"3000"
    assert tokens[tokens.index(b"stage") + 1 : tokens.index(b"stage") + 3] == [b"/usr/bin", b"b"]
    turn = Turn(argv=("/usr/sbin/ip", "a"), binds=(("b/ip", "/usr/sbin/ip"),))
    assert turn.message("on").split(b"\0")[:5] == [b"run", b"fd", b"o", b"fd", b"n"]
    with pytest.raises(ConfigError, match="absolute and normalized"):
        Root(ro_binds=(("/etc", "/usr/../etc"),)).message()
    with pytest.raises(ConfigError, match="absolute and normalized"):
        Turn(argv=("/x",), binds=(("b/ip", "relative"),)).message("on")
    with pytest.raises(ValueError, match="NUL"):
        encode(["a\0b"])
    with pytest.raises(ValueError, match="argv"):
        Turn(argv=()).message("on")


def test_a_missing_or_stale_zygote_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(client, "BINARY", tmp_path / "ngzygote")
    with pytest.raises(EnvironmentFailure, match="make setup"):
        client.binary()
    (tmp_path / "ngzygote").write_bytes(b"")
    os.utime(tmp_path / "ngzygote", (1, 1))  # built before its sources were last changed
    with pytest.raises(EnvironmentFailure, match="older than its sources"):
        client.binary()


def test_a_source_is_replaced_when_its_path_names_another_file(tmp_path):
    folder, tool, link, later = (tmp_path / n for n in ("folder", "tool", "link", "later"))
    folder.mkdir()
    tool.write_text("1")
    link.symlink_to(tool)
    root = Root(ro_binds=((str(tool), "/t"), (str(link), "/l")), ro_binds_try=(str(later),),
                stages=((str(folder), "f"),))  # fmt: skip
    held = client._Process()
    held.hold(client.host_sources(root))
    try:
        (folder / "sub").mkdir()  # inside a folder, in place: the same sources
        tool.write_text("2")
        assert held.replaced() is None
        link.unlink()  # the symlink pointed elsewhere
        link.symlink_to(folder)
        assert held.replaced() == str(link)
        link.unlink()
        link.symlink_to(tool)
        held.hold(client.host_sources(root))
        later.write_text("")  # a "try" source that appeared
        assert held.replaced() == str(later)
        held.hold(client.host_sources(root))
        folder.rename(tmp_path / "old")  # the folder made anew: its old inode is held,
        folder.mkdir()  # so the new one cannot reuse it
        assert held.replaced() == str(folder)
    finally:
        held.release()
    assert held.held == {}
