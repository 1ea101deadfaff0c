"""The console of an entry point: no line per model request or per redrawn query at INFO
(a user counted 344 "redrawing" lines before an export's progress bars, and one httpx line
per model request of a sweep, one from the MCP SDK's server per episode of an external
agent), all of it back with debugging on."""

from __future__ import annotations

import itertools
import logging
import subprocess
import sys

from pipeline.config import ROOT
from pipeline.querygen import KeyTracker, query_key

SCRIPT = """
import logging, sys
from pipeline import logs
logs.configure(debug=sys.argv[1] == "debug")
logging.getLogger("httpx").info("HTTP Request: POST http://127.0.0.1/v1/chat/completions")
logging.getLogger("mcp.server.streamable_http_manager").info("MCP session manager shutting down")
logging.getLogger("a2a.server.tasks.task_manager").info("A2A New task created")
logging.getLogger("pipeline.stages").info("cell done")
"""


def _stderr(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_request_line_is_debug_detail_and_a_stage_line_is_not():
    quiet, loud = _stderr("info"), _stderr("debug")
    chatter = ("HTTP Request", "MCP session", "A2A New task")
    assert "cell done" in quiet and not any(line in quiet for line in chatter)
    assert "cell done" in loud and all(line in loud for line in chatter)


def _take(index: int) -> list[str]:
    """Query `index` of a toy tracker whose first draw in the seed's slot is refused."""
    tracker, keys, refused = KeyTracker("toy", 1, 0), itertools.count(), []

    def pick():
        key = query_key("toy", index, next(keys))
        return key, [key]  # a value build accepts is not a str (a str is a refusal)

    def build(value):
        if not refused:
            refused.append(value)
            return "refused once"
        return value

    return tracker.take(index, pick, build, max_draws=4).value


def test_a_redrawn_query_is_a_debug_line(caplog):
    with caplog.at_level(logging.INFO, logger="pipeline.querygen"):
        _take(0)
    assert not [r for r in caplog.records if "redrawing" in r.getMessage()]
    with caplog.at_level(logging.DEBUG, logger="pipeline.querygen"):
        _take(1)
    assert [r for r in caplog.records if "redrawing" in r.getMessage()]
