"""The LLM agent's prompting and NetLLMBench's repair chain, stage by stage.

A scripted `ChatBackend` (our own boundary) plays a model that answers badly; the real
server is exercised in tests/test_serving.py and tests/test_llm_pipeline.py.
"""

from __future__ import annotations

from collections import deque

import pytest
from omegaconf import OmegaConf

from generators.malt.replies import FEW_SHOT, MaltReplyFormat
from pipeline.agents import Exchange
from pipeline.config import ConfigError, compose
from pipeline.core import Query
from pipeline.llm import prompts
from pipeline.llm.agent import LLMAgent
from pipeline.llm.config import LLMAgentConfig
from pipeline.serving.client import ChatResult

GOOD = "```python\ndef process_graph(graph):\n    return 1\n```"
QUERY = Query("malt-L1-s0-00000", "malt", 1, 0, 0, "Count the ports.", "number", "count", {})


class ScriptedBackend:
    def __init__(self, name: str, replies: list[str]) -> None:
        self.name = name
        self.replies = deque(replies)
        self.seen: list[list[dict[str, str]]] = []

    def chat(self, messages):
        self.seen.append([dict(m) for m in messages])
        text = self.replies.popleft()
        return ChatResult(text, 100, 10, 0.5, 0.1, 20.0, "stop", self.name)


class ScriptedPool:
    def __init__(self, **backends: ScriptedBackend) -> None:
        self.backends = backends

    def backend(self, cfg):
        return self.backends[cfg.name]


class FakeApp:
    reply_format = MaltReplyFormat()
    few_shot = FEW_SHOT


def agent(replies, *, master=None, strategy="zero_shot", monkeypatch=None, **repair):
    """An LLMAgent whose model (and master model) are scripted backends."""
    cfg = OmegaConf.merge(
        OmegaConf.structured(LLMAgentConfig),
        {
            "name": strategy,
            "strategy": strategy,
            "repair": {"master_model": "big" if master else None, **repair},
        },
    )
    backends = {"small": ScriptedBackend("small", replies)}
    if master is not None:
        backends["big"] = ScriptedBackend("big", master)
    model = OmegaConf.create({"name": "small"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "pipeline.plan.load_choice", lambda group, name: OmegaConf.create({"name": name})
        )
        llm = LLMAgent(cfg, FakeApp(), model=model, models=ScriptedPool(**backends))
    return llm, backends


def test_good_reply_needs_no_repair():
    llm, _ = agent([GOOD])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert reply.text == GOOD
    assert [c["purpose"] for c in reply.calls] == ["act"]
    assert (reply.prompt_tokens, reply.completion_tokens) == (100, 10)


def test_reprompt_fixes_it():
    llm, backends = agent(["the answer is 4", GOOD])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert reply.text == GOOD
    assert [c["purpose"] for c in reply.calls] == ["act", "reprompt"]
    last = backends["small"].seen[-1][-1]["content"]
    assert "could not be used: the reply contains no Python code" in last


def test_example_reprompt_shows_the_format():
    llm, backends = agent(["no", "still no", GOOD])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert [c["purpose"] for c in reply.calls] == ["act", "reprompt", "example"]
    assert MaltReplyFormat.example in backends["small"].seen[-1][-1]["content"]
    assert reply.text == GOOD


def test_master_model_extracts_the_action():
    llm, backends = agent(["no", "no", "no"], master=[GOOD])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert [(c["purpose"], c["model"]) for c in reply.calls] == [
        ("act", "small"),
        ("reprompt", "small"),
        ("example", "small"),
        ("master", "big"),
    ]
    assert reply.text == GOOD
    assert "no" in backends["big"].seen[0][-1]["content"]


def test_chain_ends_in_an_unparseable_reply_not_a_loop():
    llm, _ = agent(["no", "no", "no"], master=["still nothing"])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert reply.text == "no" and len(reply.calls) == 4
    assert FakeApp.reply_format.check(reply.text) is not None  # the env records parse_error


def test_stages_can_be_turned_off():
    llm, _ = agent(["no"], reprompt=False, example=False)
    assert [c["purpose"] for c in llm.reply(QUERY, "x", [], 1).calls] == ["act"]


def test_syntax_error_counts_as_a_format_problem():
    assert "does not compile" in MaltReplyFormat().check("```python\ndef process_graph(:\n```")


@pytest.mark.parametrize("strategy", ["zero_shot", "few_shot", "cot", "react"])
def test_strategies_build_the_conversation(strategy):
    history = [Exchange("first observation", "first reply")]
    chat = prompts.messages(strategy, "second observation", history, FEW_SHOT)
    assert chat[0]["role"] == "system"
    assert chat[-1]["role"] == "user" and chat[-1]["content"].endswith("second observation")
    shots = 2 * len(FEW_SHOT) if strategy == "few_shot" else 0
    assert len(chat) == 1 + shots + 2 + 1
    if strategy == "react":
        assert chat[-1]["content"] == "Observation: second observation"
    if strategy == "cot":
        assert "step by step" in chat[0]["content"]


def test_unknown_strategy_names_the_choices():
    choices = "zero_shot, few_shot, cot, react"
    with pytest.raises(
        ConfigError, match=rf"agent\.strategy='tot' is not allowed; choose one of: {choices}"
    ):
        compose(["agent=zero_shot", "agent.strategy=tot", "model=smollm2"])


def test_malformed_model_config_is_named():
    with pytest.raises(ConfigError, match=r"model\.dtype='int3' is not allowed"):
        compose(["agent=zero_shot", "model=smollm2", "model.dtype=int3"])
    with pytest.raises(ConfigError, match=r"model\.max_tokens"):
        compose(["agent=zero_shot", "model=smollm2", "model.max_tokens=many"])
