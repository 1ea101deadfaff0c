"""The border between an agent's text and the lab processes (issue 26), fast: JSON every
reader takes whole, text no program could take refused before anything is spawned, and the
one guard of the play loop, which turns whatever a step raises into a typed step and lets
the environment drop what the episode used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from emulators.base import CommandResult
from emulators.k8s import kubectl
from emulators.netcmd import kinds, policy, vtysh
from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.k8s import reply as k8s_reply
from generators.lab import reply as lab_reply
from generators.lab.pool import LabPool
from pipeline.agents import Reply
from pipeline.cells import Cell
from pipeline.core import Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure
from pipeline.llm import agent as llm_agent
from pipeline.play import EpisodeLoop, played
from pipeline.runner import play

HUGE = "7" * 4301  # one digit past what Python's int() takes from text


def test_a_json_number_past_pythons_digit_limit_is_json_all_the_same():
    text = f'{{"machine": "r0", "command": "ip -br addr", "n": {HUGE}}}'
    assert lab_reply.parse_reply(text) == lab_reply.Command("r0", "ip -br addr")
    assert lab_reply.CommandReplyFormat(lab_reply.Command("r0", "ip a")).check(text) is None
    found = k8s_reply.parse_reply(f'{{"command": "kubectl get pods", "n": -{HUGE}}}')
    assert found.command == "kubectl get pods"
    assert llm_agent._object(text) == {"machine": "r0", "command": "ip -br addr", "n": 1e999}


NOT_TEXT = [  # (what an agent sends, the code point no program can take)
    ("iptables -A INPUT -m comment --comment X\ud800 -j ACCEPT", "\\ud800"),
    ("iptables -A INPUT -m comment --comment X\udcff -j ACCEPT", "\\udcff"),  # would be 0xFF
    ("iptables -A INPUT -m string --algo bm --string \ud800 -j DROP", "\\ud800"),
    ("vtysh -c 'configure terminal' -c 'hostname r\ud800'", "\\ud800"),
]


@pytest.mark.parametrize(("command", "code"), NOT_TEXT)
def test_text_no_program_can_take_is_blocked_before_anything_runs(command, code, monkeypatch):
    checked = policy.check(command)
    assert not checked.allowed and code in checked.reason

    class NoEmulator:
        def run(self, *args, **kwargs) -> CommandResult:
            raise AssertionError("a refused command reached the emulator")

    monkeypatch.setattr(kinds, "preload", lambda: frozenset())
    sandbox = CommandSandbox(NoEmulator(), ["r0"], vty_dirs={"r0": "/nonexistent"})
    got = sandbox.run("r0", command)
    assert got.status is Status.REJECTED and "lone surrogate" in (got.reason or "")


def test_vtysh_and_kubectl_refuse_it_too():
    lines = ["-c", "configure terminal", "-c", "router bgp 65001"]
    checked = vtysh.check_vtysh([*lines, "-c", "neighbor 10.0.0.2 description X\udcff"], ("bgpd",))
    assert checked.reason and "\\udcff" in checked.reason
    assert vtysh.check_vtysh(lines, ("bgpd",)).reason is None
    with pytest.raises(kubectl.Refused, match="lone surrogate"):
        kubectl.parse("kubectl label pod a x=y\ud800")
    with pytest.raises(kubectl.Refused, match="stdin cannot be handed to kubectl"):
        kubectl.parse("kubectl apply -f -", stdin="metadata:\n  name: a\udcff\n")
    assert kubectl.parse("kubectl apply -f -", stdin="a: b\x00").stdin == "a: b\x00"


# -- the one guard --------------------------------------------------------------------------
class Raising:
    """An episode whose step raises what the reply names (as a strict decoder or a parser
    of ours once did), else answers."""

    max_turns = 3

    def observe(self) -> str:
        return "go"

    def step(self, reply: str) -> StepResult:
        if reply == "decode":
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
        if reply == "crash":
            raise EnvironmentFailure("the emulator crashed")
        return StepResult(reply, StepStatus.OK, "fine", done=reply == "done")


class SeeingEnv:
    """An environment that records what its episode block was left with."""

    def __init__(self) -> None:
        self.seen: list[BaseException | None] = []

    @contextlib.contextmanager
    def episode(self, query: Query) -> Iterator[Raising]:
        try:
            yield Raising()
        except BaseException as err:
            self.seen.append(err)
            raise
        self.seen.append(None)


QUERY = Query("echo-L1-s0-00000", "echo", 1, 0, 0, "go", "number", "echo", {})


def test_whatever_a_step_raises_is_an_env_error_step_with_its_reason():
    loop = EpisodeLoop(Raising())
    assert loop.step("ok").status is StepStatus.OK
    failed = loop.step("decode")
    assert failed.status is StepStatus.ENV_ERROR and failed.done and loop.over
    assert "UnicodeDecodeError" in (failed.error or "") and "invalid start byte" in failed.error
    assert isinstance(loop.failure, EnvironmentFailure)


@pytest.mark.parametrize("reply", ["decode", "crash"])
def test_the_environment_sees_the_failure_and_the_caller_has_the_step(reply):
    env = SeeingEnv()
    with played(env, QUERY) as loop:  # raises nothing out of the block
        loop.step(reply)
    assert loop.steps[-1].status is StepStatus.ENV_ERROR
    assert len(env.seen) == 1 and env.seen[0] is not None  # so it drops what it used
    assert env.seen[0].__cause__ is loop.failure
    with played(env, QUERY) as loop:
        loop.step("done")
    assert env.seen[-1] is None  # a clean episode is left cleanly


class Scripted:
    name = "scripted"

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)

    def reply(self, query, observation, history, turn) -> Reply:
        got = self.replies.pop(0)
        if isinstance(got, Exception):
            raise got
        return Reply(got)


CELL = Cell("echo", "none", "scripted", 1, 0, 1)


def test_a_cell_records_a_failing_step_and_a_failing_agent_as_typed_rows():
    env = SeeingEnv()
    rows = play(env, Scripted("ok", "decode"), QUERY, CELL)
    assert [r["status"] for r in rows] == ["ok", "env_error"]
    assert "UnicodeDecodeError" in rows[-1]["error"] and env.seen[-1] is not None
    # The agent's own code raising on what it got (a reply it cannot read) ends the
    # episode as the agent's failure, and the environment was not at fault.
    rows = play(env, Scripted("ok", ValueError("Exceeds the limit (4300 digits)")), QUERY, CELL)
    assert [r["status"] for r in rows] == ["ok", "agent_error"]
    assert "ValueError: Exceeds the limit" in rows[-1]["error"] and env.seen[-1] is None


# -- a lab whose reset raised anything is never reused --------------------------------------
class Lab:
    def __init__(self, log: list[str], n: int, fail_reset: BaseException | None) -> None:
        self.log, self.n, self.fail_reset = log, n, fail_reset

    def __enter__(self):
        return self

    def build(self, lab) -> None:
        self.log.append(f"build {self.n}")

    def snapshot(self) -> None:
        pass

    def reachability(self):
        return type("R", (), {"full": True})()

    def reset(self) -> float:
        if self.fail_reset is not None:
            raise self.fail_reset
        return 0.0

    def stop(self) -> None:
        self.log.append(f"stop {self.n}")


class Topo:
    name = "t"
    machines = ("r0",)
    switches = ()

    def lab(self):
        return None


@pytest.mark.parametrize(
    "error", [UnicodeDecodeError("utf-8", b"\xff", 0, 1, "x"), EnvironmentFailure("no")]
)
def test_a_lab_whose_reset_raised_is_stopped_and_built_again(error, monkeypatch):
    monkeypatch.setattr(kinds, "preload", lambda: frozenset())
    log: list[str] = []
    made = iter(range(10))
    pool = LabPool(
        lambda: Lab(log, next(made), error), max_live=2, command_timeout_s=1, output_bytes=256
    )
    first, _ = pool.get(Topo())
    second, _ = pool.get(Topo())  # the reset raised: the first lab is gone
    assert second is not first and log == ["build 0", "stop 0", "build 1"]
    with pytest.raises(KeyError), pool.use(Topo()):  # an episode that raised: dropped
        raise KeyError("anything")
    assert log[-2:] == ["build 2", "stop 2"] and not pool._live
    pool.close()
