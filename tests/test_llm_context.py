"""The context budget for every request of a turn, and observations shown as changes.

Every request the LLM agent sends (the first, after a diagnostic, the re-prompts, the
master model's) is fitted to its model's context; one that cannot fit, or that the server
refuses for its length even without past turns, ends the episode as a typed
`context_overflow` with the turn's calls, never an env_error. A scripted ChatBackend plays
the model (tests/test_llm_agent.py).
"""

from __future__ import annotations

import random

import pytest
from omegaconf import OmegaConf

from emulators.base import PINGALL, Reachability
from generators.lab.reply import Command, CommandReplyFormat
from generators.routing.observations import changes
from pipeline.agents import Exchange
from pipeline.cells import cell_from_config
from pipeline.errors import ContextOverflow
from pipeline.llm import context
from pipeline.llm.agent import LLMAgent
from pipeline.llm.config import LLMAgentConfig
from pipeline.runner import play
from pipeline.serving.client import RequestRejected, ToolCall
from tests.conftest import echo_config
from tests.fakes import EchoApp, EchoConfig
from tests.test_llm_agent import GOOD, QUERY, ScriptedBackend, ScriptedPool, _history, agent

TOO_LONG = RequestRejected("400", 400, "This model's maximum context length is 1024 tokens")


def _within(backend: ScriptedBackend, budget: int) -> None:
    for sent in backend.seen:
        assert context.estimate(sent, 3.0) <= budget


def test_a_reprompt_longer_than_the_first_request_leaves_out_more_turns():
    llm, backends = agent(["no code, " + "x" * 900, GOOD], context=1024)
    reply = llm.reply(QUERY, "latest", _history(6, 300), 7)
    assert reply.text == GOOD and [c["purpose"] for c in reply.calls] == ["act", "reprompt"]
    first, again = (c["dropped_turns"] for c in reply.calls)
    assert again > first
    sent = backends["small"].seen[1]
    assert sent[1]["content"].startswith("task ")  # the task stays
    assert sent[-2]["content"].startswith("no code, ")  # the bad reply and the re-prompt too
    assert "could not be used" in sent[-1]["content"]
    _within(backends["small"], 1024 - 256)


def test_a_reprompt_that_cannot_fit_is_a_context_overflow_with_the_turns_calls():
    llm, backends = agent(["x" * 1500, GOOD], context=600)
    with pytest.raises(ContextOverflow) as err:
        llm.reply(QUERY, "Count the ports.", [], 1)
    assert str(err.value).startswith(
        "the re-prompt could not be sent: the task, the latest turn and this turn's 2 later "
        "messages alone need about"
    )
    assert [c["purpose"] for c in err.value.calls] == ["act"]  # the call that was made
    assert len(backends["small"].seen) == 1  # the re-prompt was never sent


def test_a_server_refusing_a_reprompt_for_its_length_gets_fewer_turns_then_overflows():
    llm, backends = agent(["no", TOO_LONG, GOOD], context=100_000)
    reply = llm.reply(QUERY, "latest", _history(8, 100), 9)
    assert reply.text == GOOD and [c["dropped_turns"] for c in reply.calls] == [0, 4]
    assert len(backends["small"].seen[2]) < len(backends["small"].seen[1])
    llm, _ = agent(["no", TOO_LONG], context=100_000)
    with pytest.raises(ContextOverflow, match=r"the re-prompt could not be sent: the model's "):
        llm.reply(QUERY, "Count the ports.", [], 1)


def test_other_refusals_stay_the_servers_failure():
    wrong = RequestRejected("400", 400, "tool_choice 'required' is not supported")
    llm, _ = agent(["no", wrong], context=100_000)
    with pytest.raises(RequestRejected):  # an environment failure: the cell reports it
        llm.reply(QUERY, "Count the ports.", [], 1)


def test_a_master_request_past_the_master_models_context_is_a_context_overflow():
    llm, backends = agent(["no " * 200] * 3, master=[GOOD], reprompt=True)
    backends["big"].context = 300  # the master's own context, smaller than the reply
    with pytest.raises(ContextOverflow, match=r"the master model's extraction could not be sent"):
        llm.reply(QUERY, "Count the ports.", [], 1)
    assert not backends["big"].seen


def test_a_diagnostic_result_past_the_context_is_a_context_overflow():
    code = '{"code": "def process_graph(graph):\\n    return 0"}'
    llm, _ = agent(
        [ToolCall("run_code", code), GOOD],
        context=1024,
        settings={"reasoning": "react", "decoding": "tools"},
    )
    probe = llm.episode(QUERY, 1, probe=lambda name, arguments: "y" * 3000)
    with probe, pytest.raises(ContextOverflow, match=r"this turn's 2 later messages") as err:
        llm.reply(QUERY, "Count the nodes.", [], 1)
    assert [c["purpose"] for c in err.value.calls] == ["act", "diagnostic"]


@pytest.mark.usefixtures("echo_app")
def test_an_overflowing_reprompt_ends_the_episode_typed_and_the_cell_carries_on(tmp_path):
    app = EchoApp(EchoConfig(), tmp_path, None)
    cfg = OmegaConf.merge(OmegaConf.structured(LLMAgentConfig), {"name": "zero_shot"})
    small = ScriptedBackend("small", ["x" * 1500] * 2, context=600)
    llm = LLMAgent(cfg, app, model=OmegaConf.create({"name": "small"}),
                   models=ScriptedPool(small=small))  # fmt: skip
    cell = cell_from_config(echo_config(tmp_path, queries=1))
    queries = list(app.generate(1, 0, 2))
    with app.environment() as env:
        rows = [play(env, llm, q, cell) for q in queries]
    for episode in rows:
        assert [r["status"] for r in episode] == ["context_overflow"]
        assert episode[0]["error"].startswith("the re-prompt could not be sent")
        assert episode[0]["prompt_tokens"] == 100  # the act call that was made is kept


# -- observations as changes (agent.context.observations: changes) -----------------------

DEVICES = ("h1", "h2", "h3", "h4", "h5", "h6", "h7", "r0")  # a matrix longer than its changes


def _matrix(ok: set[tuple[str, str]]) -> Reachability:
    return Reachability(DEVICES, frozenset(ok))


ALL = {(s, t) for s in DEVICES for t in DEVICES if s != t}


def _observation(command: str, now: Reachability) -> str:
    return f"r0$ {command}\n(output)\n\nReachability now (turn 2 of 8, 6 left):\n{now.render()}"


@pytest.mark.parametrize("seed", range(20))
def test_a_rendered_matrix_parses_back(seed):
    rng = random.Random(seed)
    devices = tuple(f"h{i}" for i in range(rng.randint(2, 9)))
    ok = {(s, t) for s in devices for t in devices if s != t and rng.random() < 0.5}
    matrix = Reachability(devices, frozenset(ok))
    assert Reachability.parse(matrix.render()) == matrix
    with pytest.raises(ValueError):
        Reachability.parse(matrix.render().replace(" -> ", " ", 1))


def test_changes_replace_the_matrix_and_keep_the_rest():
    before = _matrix(ALL - {("h1", "h2"), ("h2", "h1"), ("h1", "r0")})
    after = _matrix(ALL - {("h1", "r0"), ("r0", "h2")})
    shown = changes(_observation("ip route", before), _observation("ip link set up", after))
    assert shown is not None and PINGALL not in shown
    assert shown.startswith("r0$ ip link set up\n(output)\n\nReachability now (turn 2 of 8")
    assert shown.endswith(
        "*** Changes since the last observation: 2 pairs now reply, 1 stopped\n"
        "now reachable: h1 -> h2\nnow reachable: h2 -> h1\n"
        "no longer reachable: r0 -> h2\n*** Results: 4% dropped (54/56 received)"
    )
    assert changes("the task, no matrix", _observation("x", after)) is None
    other = Reachability(("a", "b"), frozenset())
    assert changes(_observation("x", other), _observation("x", after)) is None
    tiny = Reachability(("a", "b"), frozenset({("a", "b")}))  # its changes would be longer
    assert changes(_observation("x", other), _observation("x", tiny)) is None


class _RoutingLike:
    """A lab app's reply format with routing's observation_changes."""

    reply_format = CommandReplyFormat(Command("r0", "ip route show"))
    few_shot = ()
    observation_changes = staticmethod(changes)


def _agent(script, **context_settings):
    cfg = OmegaConf.merge(
        OmegaConf.structured(LLMAgentConfig),
        {"context": {"observations": "changes", **context_settings}},
    )
    small = ScriptedBackend("small", script)
    llm = LLMAgent(cfg, _RoutingLike(), model=OmegaConf.create({"name": "small"}),
                   models=ScriptedPool(small=small))  # fmt: skip
    return llm, small


LOOK = '{"machine": "r0", "command": "ip route show"}'


@pytest.mark.parametrize("keep_turns", [None, 0])
def test_later_observations_are_sent_as_changes_since_the_one_before(keep_turns):
    broken = _matrix(ALL - {("h1", "h2"), ("h2", "h1")})
    task = f"Repair the network.\n\nReachability now (turn 1 of 8):\n{broken.render()}"
    half = _observation("ip link set r0-eth1 up", _matrix(ALL - {("h2", "h1")}))
    fixed = _observation("ip route add", _matrix(ALL))
    llm, small = _agent([LOOK], keep_turns=keep_turns)
    llm.reply(QUERY, fixed, [Exchange(task, LOOK), Exchange(half, LOOK)], 3)
    sent = [m["content"] for m in small.seen[0]]
    assert sent[1] == task  # the task keeps its whole matrix
    assert sum(PINGALL in text for text in sent) == 1
    if keep_turns is None:
        assert "1 pairs now reply, 0 stopped\nnow reachable: h1 -> h2\n" in sent[3]
        assert "1 pairs now reply, 0 stopped\nnow reachable: h2 -> h1\n" in sent[5]
    else:  # the turn between was left out: the latest shows what changed since the task
        assert sent[3].startswith("(1 earlier turns are left out")
        assert "2 pairs now reply, 0 stopped" in sent[3]


def test_observations_full_is_the_default():
    assert LLMAgentConfig().context.observations == "full"
    llm, small = _agent([LOOK], observations="full")
    broken = _matrix(ALL - {("h1", "h2")})
    task = f"Repair.\n{broken.render()}"
    llm.reply(QUERY, _observation("x", _matrix(ALL)), [Exchange(task, LOOK)], 2)
    assert sum(PINGALL in m["content"] for m in small.seen[0]) == 2


def test_the_policy_names_its_choices():
    from pipeline.config import ConfigError, compose

    with pytest.raises(ConfigError, match=r"agent\.context\.observations='diff' is not allowed"):
        compose(["agent=zero_shot", "model=smollm2", "agent.context.observations=diff"])
