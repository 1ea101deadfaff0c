"""The lab's persistent jail (emulators/zygote), hostile: commands that try to outlive their
turn, reach or kill the zygote, leave something for the next command, or exhaust the
machine; and zygotes that die. Each command runs in the lab jail itself (a shell bound as
its tool: tests/zygote_world.py), one zygote for the whole module, as a lab's is.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emulators.zygote.client import Zygote
from pipeline.errors import EnvironmentFailure
from tests import zygote_world as world
from tests.conftest import integration_fixture, require_root

ROOT = world.hostile_root()


@pytest.fixture(scope="module")
@integration_fixture
def jail():
    require_root("the lab jail needs root")
    with world.netns() as net:
        zygote = Zygote(ROOT, name="hostile")
        try:
            yield zygote, net
        finally:
            zygote.close()


def run(jail, script: str, timeout_s: float = 5.0, output_bytes: int = 65536):
    zygote, net = jail
    return zygote.run(world.sh(ROOT, script), net_fd=net, timeout_s=timeout_s,
                      output_bytes=output_bytes)  # fmt: skip


def pids_of(zygote: Zygote) -> tuple[int, int]:
    """(waiter, zygote): the host pids the jail is made of."""
    waiter = zygote.pid
    assert waiter is not None
    (inner,) = [p for p in world.children(waiter)]
    return waiter, inner


def test_a_command_cannot_outlive_its_turn(jail):
    marker = "4242.17"
    got = run(jail, f"sleep {marker} & (sleep {marker} &) & sleep 0.2; echo done")
    assert got.exit_code == 0 and not got.timed_out
    assert world.running(marker) == []  # gone when the report came, not some time later
    assert jail[0].cgroup.pids() == []


def test_a_fork_bomb_is_bounded_by_its_cgroup_and_leaves_nothing(jail):
    zygote, _ = jail
    before = pids_of(zygote)
    marker = "1.04245"  # a marker no other user's `sleep` holds (`sleep 1` matched one)
    got = run(jail, f"b() {{ b & b & }}; b; sleep {marker}; echo survived", timeout_s=3)
    assert "fork" in got.output.lower() or got.timed_out  # dash reports "can't fork"
    group = zygote.cgroup
    assert (Path(group.dirs[-1]) / "pids.max").read_text().strip() == str(ROOT.pids)
    assert group.pids() == [] and world.running(f"sleep {marker}") == []
    assert pids_of(zygote) == before  # the zygote served on, untouched
    assert run(jail, "echo next").output == "next\n"


def test_a_command_cannot_signal_trace_or_see_the_zygote(jail):
    zygote, _ = jail
    waiter, inner = pids_of(zygote)
    script = (
        f"kill -9 {inner} {waiter}; kill -9 0; kill -9 -1; kill -9 1; kill -9 $PPID; "
        'echo ppid=$PPID; for p in /proc/[0-9]*; do echo -n "${p#/proc/} "; done; echo; '
        "ls -l /proc/self/fd/ /proc/1/fd/; cat /proc/1/cmdline; echo"
    )
    got = run(jail, script)
    assert "ppid=0" in got.output  # its parent is outside its pid namespace
    assert "socket:" not in got.output and "anon_inode" not in got.output  # no pidfd either
    assert "/usr/bin/dash" in got.output  # its pid 1 is itself
    pids = next(line for line in got.output.splitlines() if line.startswith("1 ")).split()
    assert pids == ["1"], pids  # nothing of the zygote's in its /proc
    assert world.alive(waiter) and world.alive(inner) and pids_of(zygote) == (waiter, inner)
    assert run(jail, "echo next").output == "next\n"


def test_nothing_a_command_writes_reaches_the_next(jail):
    first = run(
        jail,
        "for d in /tmp /run /dev/shm; do echo kept > $d/left && echo wrote $d; done; "
        "for d in / /etc /usr/bin /dev /proc/sys/kernel; do "
        "echo x > $d/left 2>/dev/null && echo LEAK $d; done; "
        "echo 1 > /proc/sys/net/ipv4/ip_forward 2>/dev/null && echo LEAK forward; "
        "ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && echo ipc; export LEFT=1",
    )
    assert first.output.count("wrote") == 3 and "ipc" in first.output, first.output
    assert "LEAK" not in first.output
    second = run(jail, "ls -A /tmp /run /dev/shm; cat /tmp/left; ipcs -m -q; env")
    assert "left" not in second.output.replace("cat: /tmp/left", "")
    assert "0x" not in second.output  # no shared memory segment, no message queue key
    assert "LEFT" not in second.output and second.output.count("=") == 2  # PATH and PWD


def test_the_staged_sources_and_the_other_tools_are_out_of_reach(jail):
    got = run(jail, "cat /proc/self/mountinfo; ls -la /usr/sbin; /usr/sbin/tc; echo tc=$?")
    points = [line.split()[4] for line in got.output.splitlines() if line.count(" - ") == 1]
    assert "/usr/bin" not in points and "/usr/sbin" not in points and "/.ng" not in points
    assert "/usr/bin/dash" in points  # each program its command binds, one file each
    tc = [line for line in got.output.splitlines() if line.endswith(" tc")]
    assert tc and tc[0].startswith("----------") and " 0 " in tc[0]  # an empty target
    assert "tc=126" in got.output or "tc=127" in got.output


def test_output_past_the_cap_stops_the_command_and_leaves_nothing(jail):
    got = run(jail, "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done", output_bytes=4096)
    assert got.truncated and got.exit_code is None and len(got.output) == 4096
    assert jail[0].cgroup.pids() == [] and run(jail, "echo next").output == "next\n"


def test_a_zygote_killed_between_commands_is_restarted(jail):
    zygote, _ = jail
    waiter, inner = pids_of(zygote)
    starts = zygote.starts
    world.kill(inner)
    assert world.gone_within({waiter, inner}, 5)
    assert run(jail, "echo again").output == "again\n"
    assert zygote.starts == starts + 1 and pids_of(zygote)[0] != waiter


def test_a_zygote_killed_during_a_command_is_an_environment_failure_not_a_hang(jail):
    zygote, _ = jail
    _, inner = pids_of(zygote)
    threading.Timer(0.5, world.kill, (inner,)).start()
    started = time.monotonic()
    with pytest.raises(EnvironmentFailure, match="zygote"):
        run(jail, "sleep 30.4246", timeout_s=20)
    assert time.monotonic() - started < 5
    assert world.running("sleep 30.4246") == []
    assert run(jail, "echo again").output == "again\n"


NETGAUGE = """
import sys, time
sys.path.insert(0, {repo!r})
from tests import zygote_world as world
from emulators.zygote.client import Zygote
with world.netns("sleep 86400.25") as net:
    z = Zygote(world.hostile_root(), name="orphan")
    print(z.pid, flush=True)
    z.run(world.sh(z.root, "sleep 4243.5"), net_fd=net, timeout_s=60, output_bytes=100)
"""


def test_the_zygote_and_its_commands_die_with_netgauge(jail):
    """NetGauge killed outright (SIGKILL, no cleanup): the zygote sees its pid go and
    takes every command of its pid namespace along."""
    repo = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen([sys.executable, "-c", NETGAUGE.format(repo=repo)],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        waiter = int(proc.stdout.readline())
        deadline = time.monotonic() + 20
        while not world.running("sleep 4243.5") and time.monotonic() < deadline:
            time.sleep(0.05)
        jailed = world.family(waiter) | set(world.running("sleep 4243.5"))
        assert len(jailed) >= 3, jailed  # waiter, zygote, the command (and its prepared next)
        world.kill(proc.pid)
        proc.wait()
        assert world.gone_within(jailed, 10), [p for p in jailed if world.alive(p)]
    finally:
        world.kill(proc.pid)
        proc.wait()
        for holder in world.running("sleep 86400.25"):  # its namespace holder, orphaned
            world.kill(holder)


def test_the_host_watch_counts_the_zygote_as_ours_and_it_leaves_nothing(jail):
    """tests/hostwatch.py attributes the jail's processes (waiter, zygote, the command and
    the child prepared for the next one, in their own pid namespaces) to the test run, so a
    leaked zygote fails a host comparison; closed, it leaves no process or file behind."""
    from tests import hoststate
    from tests.conftest import require
    from tests.hostwatch import Tracker

    watch = Tracker.start(hoststate.FILE_TOPS)
    require(watch is not None, "the kernel has no proc connector or fanotify")
    try:
        before = hoststate._processes()  # processes and the files the run touched: the
        # whole snapshot walks every file under /tmp, seconds on a shared machine
        zygote = Zygote(world.hostile_root(), name="watched")
        try:
            got = zygote.run(world.sh(zygote.root, "sleep 4244.5 & echo $$; wait"),
                             net_fd=jail[1], timeout_s=0.5, output_bytes=100)  # fmt: skip
            assert got.timed_out and got.output.strip() == "1"  # pid 1 of its namespace
            jailed = world.family(zygote.pid)
            assert len(jailed) >= 3, jailed  # waiter, zygote, the next command's child
            assert all(watch.is_ours(pid) for pid in jailed)
            leaked = _new_processes(watch, before)
            assert sorted(pid for pid, _ in leaked) == sorted(jailed), leaked
        finally:
            zygote.close()
        assert world.gone_within(jailed, 5)
        assert _new_processes(watch, before) == []
        assert watch.paths() == set()  # not a file under /tmp, /root or /etc
    finally:
        watch.close()


def _new_processes(watch, before: dict) -> list[tuple[int, int]]:
    from tests import hoststate

    after = hoststate._processes()
    return [key for key in after if key not in before and watch.pid_of_ours(key)]
