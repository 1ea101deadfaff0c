"""Attacks on the lab's persistent jail (emulators/zygote) from what an agent controls: the
argv of a command that passed its policy (its size, its tokens), and whatever the command
does while the zygote prepares the next one's child. Each test fails if its attack works.
The payloads run as a shell bound as the tool (tests/zygote_world.py), as the hostile
suite's do; one zygote for the module, as a lab's is.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from emulators.k8s import kubectl
from emulators.netcmd.policy import check
from emulators.zygote.client import Zygote
from emulators.zygote.spec import Turn
from tests import zygote_world as world
from tests.conftest import integration_fixture, require_root

KEYS = Path(__file__).with_name("zygote_keys.c")  # put|get|del a key: user|session keyring
# What a command's process is made of, as /proc/self/status and the shell's builtins say.
STATUS = (
    'while read -r k v; do case "$k" in Sig[BIC]*|Cap*|NoNewPrivs:|Seccomp:|Umask:|Uid:|Gid:)'
    ' echo "$k $v";; esac; done < /proc/self/status; ulimit -a; pwd; cat /proc/self/cgroup;'
    " ls /proc/self/fd; cat /proc/self/oom_score_adj /proc/self/personality; echo"
)


@pytest.fixture(scope="module")
@integration_fixture
def jail(tmp_path_factory):
    """(zygote, network namespace fd, root, the keyring probe's host path)."""
    require_root("the lab jail needs root")
    folder = tmp_path_factory.mktemp("zygote-attacks")
    probe = folder / "ngkeys"
    subprocess.run(["gcc", "-O2", "-o", str(probe), str(KEYS)], check=True, timeout=60)
    base = world.hostile_root()
    root = dataclasses.replace(base, stages=(*base.stages, (str(folder), "attack")),
                               targets=(*base.targets, ("f", "/usr/bin/ngkeys")))  # fmt: skip
    with world.netns() as net:
        zygote = Zygote(root, name="attacks")
        try:
            yield zygote, net, root, probe
        finally:
            zygote.close()
            for ring in ("user", "session"):  # the attack's key, should it have worked
                subprocess.run([str(probe), "del", ring], capture_output=True, timeout=10)


def run(jail, script: str, *args: str, timeout_s: float = 10.0, writes: tuple[str, ...] = ()):
    zygote, net, root, _ = jail
    turn = world.sh(root, script, writes)
    turn = Turn(argv=(*turn.argv, "sh", *args), binds=turn.binds, writable_sysctls=writes)
    return zygote.run(turn, net_fd=net, timeout_s=timeout_s, output_bytes=1 << 20)


def _longest_kubectl_argv() -> list[str]:
    """The most arguments one kubectl line may carry past kubectl.parse and its check."""
    line = "kubectl get pods " + " ".join("p" for _ in range(8000))
    cmd = kubectl.parse(line)
    assert kubectl.check(cmd) == "get"
    return ["kubectl", *cmd.argv]


def test_the_longest_argv_an_agent_may_send_runs_as_in_bubblewrap(jail):
    # Attack: an argv within the agent's limits but past the zygote's own (512 arguments,
    # 4096 message tokens) made the jail answer "setup"/"refused": an EnvironmentFailure,
    # "not the agent's" fault, at the agent's will (bubblewrap ran such a command).
    argv = _longest_kubectl_argv()
    assert len(argv) > 4096
    for args in (argv[:600], argv):
        got = run(jail, 'echo "$#"', *args)
        assert got.exit_code == 0 and got.output == f"{len(args)}\n", got.output[-300:]


def test_argv_tokens_that_spell_requests_stay_arguments(jail):
    # Attack: arguments that read as the message's own tokens (fd, bind, exe, argv and a
    # count), empty, or not UTF-8, to make the zygote bind, run or hand over something else.
    tricky = ["argv", "2", "fd", "o", "bind", "d0/ip", "/usr/bin/id", "exe", "/usr/bin/id", "",
              "rw-sysctl", "/proc/sys/net/ipv4/ip_forward", "\udcff\udcfe", "-", "run"]  # fmt: skip
    got = run(jail, 'for a in "$@"; do printf "[%s]" "$a"; done; echo; id -u', *tricky)
    assert got.exit_code == 0
    shown = "".join(f"[{a}]" for a in tricky).replace("\udcff\udcfe", "\ufffd\ufffd")
    assert got.output == f"{shown}\n0\n", got.output


def test_the_next_child_starts_clean_whatever_the_running_command_does(jail):
    # Attack: while a command runs, the zygote forks the next command's child; the command
    # changes all a process carries (limits, umask, signal dispositions, cwd, priority,
    # environment) hoping the zygote, and so the next command, takes some of it.
    before = run(jail, STATUS)
    hostile = (
        "ulimit -n 16; ulimit -s 256; ulimit -c 0; umask 077; cd /tmp; export LEAK=1; "
        "trap '' INT TERM HUP PIPE USR1 USR2; echo 19 > /proc/self/oom_score_adj; "
        # hold on, so that the next child is prepared while this one runs
        "sleep 0.3; echo held"
    )
    assert run(jail, hostile).output.endswith("held\n")
    after = run(jail, STATUS)
    assert before.exit_code == after.exit_code == 0
    assert after.output == before.output, (before.output, after.output)
    assert "SigIgn: 0000000000000000" in after.output and "Umask: 0022" in after.output


def test_a_sysctl_key_that_cannot_exist_is_the_tools_failure_not_the_jails(jail):
    # Attack: a key the policy lets through (any interface name) whose path cannot be, a
    # component past NAME_MAX, to make binding it writable fail in the jail ("setup", an
    # EnvironmentFailure at the agent's will). Blocked: procfs answers ENOENT, which the
    # jail skips as bubblewrap's --bind-try does; the command runs.
    checked = check("sysctl -w net.ipv4.conf." + "a" * 300 + ".rp_filter=1")
    assert checked.allowed and len(checked.writes) == 1
    got = run(jail, "cat /proc/sys/net/ipv4/conf/lo/rp_filter; echo ran", writes=checked.writes)
    assert got.exit_code == 0 and got.output.endswith("ran\n"), got.output


def test_a_command_leaves_no_key_for_the_next_one_or_the_host(jail):
    # Attack: kernel keyrings are in no namespace: a lab command (uid 0 of the host) adds a
    # key to uid 0's user keyring, or to the session keyring it inherits from NetGauge, and
    # the next command, NetGauge itself and the next episode read it. It worked in the
    # zygote as in bubblewrap; the zygote now denies the keyring calls (seccomp).
    zygote, net, _, probe = jail

    def keys(*args: str) -> str:
        turn = Turn(argv=("/usr/bin/ngkeys", *args), binds=(("attack/ngkeys", "/usr/bin/ngkeys"),))
        return zygote.run(turn, net_fd=net, timeout_s=10.0, output_bytes=4096).output

    for ring in ("user", "session"):
        assert keys("put", ring) == "put refused\n"
        assert keys("get", ring) == "none\n"
        host = subprocess.run([str(probe), "get", ring], capture_output=True, text=True)
        assert host.stdout == "none\n"
    got = run(jail, STATUS)
    assert "Seccomp: 2" in got.output
