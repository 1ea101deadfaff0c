"""Replies no app should have to survive: huge, not text, unstorable. Through the whole run
and score stages on the fake echo app, every one becomes a typed row and the cell finishes."""

from __future__ import annotations

import pytest

from pipeline import registry, untrusted
from pipeline.agents import Reply
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.core import Query, StepStatus
from pipeline.generate import generate
from pipeline.records import read_shard
from pipeline.registry import AgentSpec
from pipeline.runner import run
from pipeline.scoring import score
from tests.conftest import echo_config
from tests.fakes import EchoConfig, _Episode

HUGE = "7" * (untrusted.DEFAULT_MAX_REPLY_CHARS + 1)
REPLIES = [
    "0",  # query 0: the right answer, as a control
    "\ud800 14 \udfff",  # a lone surrogate pair from a JSON escape: unstorable as UTF-8
    HUGE,  # past the bound: never parsed, even though it is all digits
    "21\x00",  # a NUL byte is valid UTF-8 and kept
    "\udcff" * 10,
]


class HostileAgent:
    def __init__(self, cfg, app) -> None:
        self.name = cfg.name

    def reply(self, query, observation, history, turn) -> Reply:
        return Reply(REPLIES[query.index])


AGENT_CONFIG = "pipeline.config:AgentConfig"


@pytest.fixture
def hostile_agent():
    spec = AgentSpec("hostile_text", "tests.test_untrusted:HostileAgent", AGENT_CONFIG)
    with registry.AGENTS.override("hostile_text", spec):
        yield


def test_storable_escapes_lone_surrogates_only():
    assert untrusted.storable("plain") == "plain"
    assert untrusted.storable("grüße 🙂") == "grüße 🙂"
    assert untrusted.storable("a\ud800b") == "a\\ud800b"
    assert untrusted.storable("\udfff") == "\\udfff"
    untrusted.storable("a\ud800b").encode("utf-8")  # no longer raises


def test_over_long_and_non_text_replies_reach_the_app_as_empty():
    query = Query("echo-L1-s0-00000", "echo", 1, 0, 0, "Say 0.", "number", "echo", {})
    episode = _Episode(query, EchoConfig())
    result = untrusted.step(episode, "0" * 11, max_chars=10)
    assert result.status is StepStatus.PARSE_ERROR
    assert result.action == ""
    assert "11 characters long; at most 10" in result.error
    result = untrusted.step(episode, b"0", max_chars=10)
    assert result.status is StepStatus.PARSE_ERROR
    assert "bytes, not text" in result.error
    assert untrusted.step(episode, "0", max_chars=10).status is StepStatus.OK


@pytest.mark.usefixtures("echo_app", "hostile_agent")
def test_hostile_text_becomes_typed_rows(tmp_path):
    cfg = echo_config(tmp_path, agent="hostile_text", queries=len(REPLIES))
    cfg.agent.kind = "hostile_text"
    generate(cfg)
    run(cfg)
    score(cfg)
    cell = cell_from_config(cfg)
    episodes = read_shard("episodes", layout(cfg).episodes(cell)).to_pylist()
    assert [e["outcome"] for e in episodes] == [
        "correct",
        "parse_error",
        "parse_error",
        "parse_error",
        "parse_error",
    ]
    steps = read_shard("steps", layout(cfg).steps(cell)).to_pylist()
    replies = [s["reply"] for s in steps]
    assert replies[1] == "\\ud800 14 \\udfff"
    assert replies[2].startswith("7" * 1000)
    assert f"[reply cut: {len(HUGE)} characters, sha256 {untrusted.digest(HUGE)}]" in replies[2]
    assert len(replies[2]) < len(HUGE) + 200
    assert replies[3] == "21\x00"
    assert "at most" in steps[2]["error"]


# -- reading replies is linear -------------------------------------------------------------------
CAP = untrusted.DEFAULT_MAX_REPLY_CHARS
# Replies built to make a parser go back over what it read, each at the pipeline's cap.
ADVERSARIAL = {
    "fence openers": "```" * (CAP // 3),
    "openers with a tag": "```x" * (CAP // 4),
    "python openers": "```python\n" * (CAP // 10),
    "unclosed block": "```python\n" + "def process_graph(graph):\n" * (CAP // 27),
    "backticks": "`" * CAP,
    "braces": "{" * CAP,
    "strings": '{"a": "' * (CAP // 7),
    "brackets": '{"command": ' + "[" * (CAP - 20),
    "blank lines": "\n" * CAP,
    "spaces then def": " " * (CAP - 30) + "def process_graph(graph):",
    "defs": "def " * (CAP // 4),
    "def spaces": "def" + " " * (CAP - 20) + "x",
    "heredocs": "kubectl apply -f - <<" * (CAP // 21),
    "cat pipes": "cat <<" + "|" * (CAP - 20),
    "continued": "kubectl get \\\n" * (CAP // 14),
}


class _CountingText(str):
    """A reply that counts the characters its `find` calls pass over."""

    scanned = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        found = str.find(self, sub, start, len(self) if end is None else end)
        _CountingText.scanned += (len(self) if found == -1 else found + len(sub)) - start
        return found


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_fenced_blocks_pass_over_each_character_a_bounded_number_of_times(name):
    text = _CountingText(ADVERSARIAL[name])
    _CountingText.scanned = 0
    blocks = list(untrusted.fenced_blocks(text))
    assert _CountingText.scanned <= len(text) + 3 * len(blocks) + 8, name


def test_fenced_blocks_find_what_the_expression_found():
    import random
    import re

    expression = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
    pieces = ["```", "`", "\n", " ", "\t", "python", "py", "x", "def process_graph(", "-", "é"]
    for seed in range(3000):
        rnd = random.Random(seed)
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 30)))
        found = [(m.group(1), m.group(2)) for m in expression.finditer(text)]
        assert list(untrusted.fenced_blocks(text)) == found, text


_PARSE_ALL = """
import json, sys, time
from generators.k8s.reply import K8sReplyFormat
from generators.lab.reply import parse_reply as lab_parse
from generators.malt.replies import MaltReplyFormat, extract_code
from tests.test_untrusted import ADVERSARIAL
parsers = {
    "k8s": K8sReplyFormat().check,
    "lab": lab_parse,
    "malt extract": extract_code,
    "malt check": MaltReplyFormat().check,
}
seconds = {}
for name, text in ADVERSARIAL.items():
    for parser, parse in parsers.items():
        started = time.perf_counter()
        parse(text)
        seconds[f"{parser} / {name}"] = round(time.perf_counter() - started, 3)
print(json.dumps(seconds))
"""


def test_every_apps_reply_parser_reads_adversarial_replies_at_the_cap():
    """Each parser on each reply above, in a child process so a quadratic parser (MALT's
    fence expression took about 5 minutes on 1 MiB of "```") fails here instead of hanging
    the suite. The deadline guards against a hang; it is not a speed claim (linear reads
    take milliseconds; `test_fenced_blocks_pass_over_...` shows the scan's linearity)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PARSE_ALL],
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a reply parser did not finish 60 adversarial replies in 120 s")
    assert done.returncode == 0, done.stderr[-2000:]
    seconds = json.loads(done.stdout)
    assert len(seconds) == 4 * len(ADVERSARIAL)
