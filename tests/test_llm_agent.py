"""The LLM agent's prompting and NetLLMBench's repair chain, stage by stage.

A scripted `ChatBackend` (our own boundary) plays a model that answers badly; the real
server is exercised in tests/test_serving.py and tests/test_llm_pipeline.py.
"""

from __future__ import annotations

import json
from collections import deque

import pytest
from omegaconf import OmegaConf

from generators.malt.replies import FEW_SHOT, MaltReplyFormat
from pipeline.agents import Exchange
from pipeline.config import ConfigError, compose
from pipeline.core import Query
from pipeline.errors import ContextOverflow
from pipeline.llm import context, examples, prompts
from pipeline.llm.agent import LLMAgent
from pipeline.llm.config import LLMAgentConfig
from pipeline.serving.client import ChatResult, RequestRejected, ToolCall

GOOD = "```python\ndef process_graph(graph):\n    return 1\n```"
QUERY = Query("malt-L1-s0-00000", "malt", 1, 0, 0, "Count the ports.", "number", "count", {})


class ScriptedBackend:
    """A model that answers from a script: a string is text, a ToolCall a tool call, an
    exception is raised (e.g. the server refusing a request)."""

    def __init__(self, name: str, replies: list, context: int = 4096) -> None:
        self.name = name
        self.replies = deque(replies)
        self.seen: list[list[dict[str, str]]] = []
        self.options: list[dict] = []
        self.context = context
        self.max_reply = 256

    def chat(self, messages, **options):
        self.seen.append([dict(m) for m in messages])
        self.options.append(options)
        reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ToolCall):
            return ChatResult("", 100, 10, 0.5, 0.1, 20.0, "tool_calls", self.name, (reply,))
        return ChatResult(reply, 100, 10, 0.5, 0.1, 20.0, "stop", self.name)


class ScriptedPool:
    def __init__(self, **backends: ScriptedBackend) -> None:
        self.backends = backends

    def backend(self, cfg):
        return self.backends[cfg.name]


class FakeApp:
    reply_format = MaltReplyFormat()
    few_shot = FEW_SHOT


def agent(replies, *, master=None, context=4096, settings=None, **repair):
    """An LLMAgent whose model (and master model) are scripted backends."""
    cfg = OmegaConf.merge(
        OmegaConf.structured(LLMAgentConfig),
        {"repair": {"master_model": "big" if master else None, **repair}, **(settings or {})},
    )
    backends = {"small": ScriptedBackend("small", replies, context)}
    if master is not None:
        backends["big"] = ScriptedBackend("big", master)
    model = OmegaConf.create({"name": "small"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "pipeline.llm.agent.load_choice", lambda group, name: OmegaConf.create({"name": name})
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


@pytest.mark.parametrize("reasoning", ["none", "cot", "react"])
@pytest.mark.parametrize("shown", [0, 2])
def test_strategies_compose_examples_and_reasoning(reasoning, shown):
    history = [Exchange("first observation", "first reply")]
    chat = prompts.messages(reasoning, "second observation", history, FEW_SHOT[:shown])
    assert chat[0]["role"] == "system"
    assert chat[-1]["role"] == "user" and chat[-1]["content"].endswith("second observation")
    assert len(chat) == 1 + 2 * shown + 2 + 1
    assert [m["content"] for m in chat[1 : 1 + 2 * shown]] == [
        t for p in FEW_SHOT[:shown] for t in p
    ]
    if reasoning == "react":
        assert chat[-1]["content"] == "Observation: second observation"
    if reasoning == "cot":
        assert "step by step" in chat[0]["content"]


def test_nearest_examples_are_the_most_similar_tasks():
    library = [
        ("How many ports are in aggregation block ju1.a2.m1?", "A"),
        ("Remove packet switch ju1.a1.m1.s2c1 from the topology.", "B"),
        ("List the racks of superblock ju1.a3.", "C"),
    ]
    task = "Remove the packet switch ju1.a4.m2.s3c5 and every port it holds."
    assert examples.choose("nearest", library, task, 1) == [library[1]]
    assert examples.choose("fixed", library, task, 2) == library[:2]
    assert examples.choose("none", library, task, 2) == []


def test_nearest_examples_can_come_from_an_sft_export(tmp_path):
    export = tmp_path / "train.jsonl"
    record = {"messages": [{"role": "user", "content": "Rank the racks by port count."},
                           {"role": "assistant", "content": "RANKED"}]}  # fmt: skip
    export.write_text(json.dumps(record) + "\n")
    llm, backends = agent([GOOD], settings={"examples": "nearest", "shots": 1,
                                            "library": str(export)})  # fmt: skip
    llm.reply(QUERY, "Rank the racks of ju1.a1 by their port count.", [], 1)
    sent = backends["small"].seen[0]
    assert [m["content"] for m in sent[1:3]] == ["Rank the racks by port count.", "RANKED"]
    with pytest.raises(ConfigError, match=r"agent.library: no such file"):
        agent([GOOD], settings={"library": str(tmp_path / "nope.jsonl")})


def test_json_decoding_constrains_to_the_action_and_renders_the_reply():
    llm, backends = agent(['{"code": "def process_graph(graph):\\n    return 1"}'],
                          settings={"decoding": "json"})  # fmt: skip
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert reply.text == GOOD
    sent = backends["small"].options[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["required"] == ["code"]


def test_tool_decoding_names_the_action_and_a_call_becomes_the_reply():
    call = ToolCall("submit_code", '{"code": "def process_graph(graph):\\n    return 1"}')
    llm, backends = agent([call], settings={"decoding": "tools"})
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert reply.text == GOOD
    options = backends["small"].options[0]
    assert options["tool_choice"] == {"type": "function", "function": {"name": "submit_code"}}
    assert options["tools"][0]["function"]["name"] == "submit_code"
    assert reply.calls[0]["response"].endswith(
        '[tool call] submit_code({"code": "def process_graph(graph):\\n    return 1"})'
    )


def test_a_structured_reply_that_is_not_an_object_goes_through_the_repair_chain():
    llm, _ = agent(["not json", '{"code": "def process_graph(graph):\\n    return 1"}'],
                   settings={"decoding": "json"})  # fmt: skip
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert [c["purpose"] for c in reply.calls] == ["act", "reprompt"] and reply.text == GOOD


def test_repair_exchanges_are_kept_with_each_call():
    llm, _ = agent(["the answer is 4", GOOD])
    calls = llm.reply(QUERY, "Count the ports.", [], 1).calls
    assert calls[0]["request"] == "Count the ports." and calls[0]["response"] == "the answer is 4"
    assert "could not be used" in calls[1]["request"] and calls[1]["response"] == GOOD


def _history(turns: int, size: int) -> list[Exchange]:
    return [Exchange(("task " if i == 0 else f"matrix {i} ") + "x" * size, f"reply {i}")
            for i in range(turns)]  # fmt: skip


def test_old_turns_are_left_out_to_fit_the_context():
    # 10 past turns of ~400 characters each; the model takes 1,024 tokens, 256 of them
    # for the reply: at 3 characters a token the task and a few turns fit.
    llm, backends = agent([GOOD], context=1024)
    reply = llm.reply(QUERY, "latest " + "y" * 300, _history(10, 400), 11)
    sent = backends["small"].seen[0]
    assert sent[1]["content"].startswith("task ")  # the task always stays
    assert sent[-1]["content"].startswith("latest ")  # and so does the latest observation
    dropped = reply.calls[0]["dropped_turns"]
    assert 0 < dropped < 10
    assert f"({dropped} earlier turns are left out" in sent[3]["content"]
    assert context.estimate(sent, 3.0) <= 1024 - 256


def test_a_server_refusing_the_length_gets_fewer_turns():
    too_long = RequestRejected("400", 400, "This model's maximum context length is 1024 tokens")
    llm, backends = agent([too_long, GOOD], context=100_000)
    reply = llm.reply(QUERY, "latest", _history(8, 100), 9)
    assert reply.text == GOOD
    assert len(backends["small"].seen[1]) < len(backends["small"].seen[0])


def test_a_task_that_does_not_fit_is_a_context_overflow():
    llm, _ = agent([GOOD], context=300)
    with pytest.raises(ContextOverflow, match=r"the task and the latest turn alone need about"):
        llm.reply(QUERY, "x" * 5000, [], 1)


def test_unknown_strategy_parts_name_the_choices():
    with pytest.raises(
        ConfigError, match=r"agent\.reasoning='tot' is not allowed; choose one of: none, cot, react"
    ):
        compose(["agent=zero_shot", "agent.reasoning=tot", "model=smollm2"])
    with pytest.raises(ConfigError, match=r"agent\.decoding='xml' is not allowed"):
        compose(["agent=zero_shot", "agent.decoding=xml", "model=smollm2"])


def test_malformed_model_config_is_named():
    with pytest.raises(ConfigError, match=r"model\.dtype='int3' is not allowed"):
        compose(["agent=zero_shot", "model=smollm2", "model.dtype=int3"])
    with pytest.raises(ConfigError, match=r"model\.max_tokens"):
        compose(["agent=zero_shot", "model=smollm2", "model.max_tokens=many"])


def test_react_with_tools_may_run_diagnostics_before_it_acts():
    """The model calls run_code twice, sees each result, then submits; the diagnostics
    are offered beside the action and the probe answers them."""
    probe_code = '{"code": "def process_graph(graph):\\n    return len(graph)"}'
    submit = '{"code": "def process_graph(graph):\\n    return 1"}'
    script = [ToolCall("run_code", probe_code), ToolCall("run_code", probe_code),
              ToolCall("submit_code", submit)]  # fmt: skip
    llm, backends = agent(script, settings={"reasoning": "react", "decoding": "tools"})
    asked: list[tuple[str, dict]] = []

    def probe(name, arguments):
        asked.append((name, arguments))
        return "printed:\n\nreturned: 5493"

    with llm.episode(QUERY, 1, probe=probe):
        reply = llm.reply(QUERY, "Count the nodes.", [], 1)
    assert reply.text == GOOD and [n for n, _ in asked] == ["run_code", "run_code"]
    sent = backends["small"]
    assert {t["function"]["name"] for t in sent.options[0]["tools"]} == {"submit_code", "run_code"}
    assert sent.options[0]["tool_choice"] == "required"
    assert sent.seen[-1][-1]["content"] == "Observation (run_code): printed:\n\nreturned: 5493"
    assert [c["purpose"] for c in reply.calls] == ["act", "diagnostic"] * 2 + ["act"]
    looked = reply.calls[1]  # the diagnostic's own record: what it was asked, what it showed
    assert looked["request"] == f"run_code {probe_code}" and looked["prompt_tokens"] is None
    assert looked["response"] == "printed:\n\nreturned: 5493"
    assert (reply.prompt_tokens, reply.completion_tokens) == (300, 30)  # the model's calls


def test_diagnostics_past_their_budget_leave_no_action_and_the_chain_repairs():
    probe_code = '{"code": "def process_graph(graph):\\n    return 0"}'
    submit = '{"code": "def process_graph(graph):\\n    return 1"}'
    script = [ToolCall("run_code", probe_code)] * 2 + [ToolCall("submit_code", submit)]
    llm, backends = agent(script, settings={"reasoning": "react", "decoding": "tools",
                                            "max_probes": 1})  # fmt: skip
    with llm.episode(QUERY, 1, probe=lambda name, arguments: "returned: 0"):
        reply = llm.reply(QUERY, "Count the nodes.", [], 1)
    assert [c["purpose"] for c in reply.calls] == ["act", "diagnostic", "act", "reprompt"]
    assert reply.text == GOOD
    options = backends["small"].options
    assert [len(o["tools"]) for o in options] == [2, 1, 1]  # past the budget: the action only
    assert options[1]["tool_choice"] == {"type": "function", "function": {"name": "submit_code"}}


def test_without_an_episode_probe_react_acts_directly():
    submit = '{"code": "def process_graph(graph):\\n    return 1"}'
    llm, backends = agent(
        [ToolCall("submit_code", submit)], settings={"reasoning": "react", "decoding": "tools"}
    )
    assert llm.reply(QUERY, "Count.", [], 1).text == GOOD
    assert backends["small"].options[0]["tool_choice"]["function"]["name"] == "submit_code"
