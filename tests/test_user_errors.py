"""Bad input from the user gets one clear line, and before any work (issue 26).

What a new user mistypes on the command line — a key (`agnt=`, `app.max_turn=`,
`+app.foo=`), a dead model endpoint, a grid the data directory has no plan for, an MCP
agent without a command, an A2A agent without a URL, a data directory that cannot be
made, a time limit that is no number — ends with exit status 2 and one `error: …` line
naming the key, without a traceback, and the checks that need no work run before any
query is generated (the routing app's generation takes 30-50 s of live labs).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from pipeline.config import ROOT, NetGaugeConfig, compose
from pipeline.configkeys import check_keys
from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.plan import load_plan
from pipeline.preflight import check_cell, reach

PY = sys.executable


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("agnt=oracle", "unknown config key 'agnt' (did you mean 'agent'?); the keys of the top"),
        ("app.max_turn=3", "unknown config key 'app.max_turn' (did you mean 'app.max_turns'?)"),
        ("+app.foo=1", "unknown config key 'app.foo'; the keys of app 'malt' are: kind,"),
        ("app.topology.superblock=2", "(did you mean 'app.topology.superblocks'?)"),
        ("run.concurency=2", "(did you mean 'run.concurrency'?); the keys of 'run' are"),
        ("grid.aps=[malt]", "(did you mean 'grid.apps'?)"),
    ],
)
def test_a_mistyped_key_is_named_with_the_closest_one(override, message):
    with pytest.raises(ConfigError, match=r"^unknown config key") as err:
        check_keys(["app=malt", override], NetGaugeConfig)
    assert message in str(err.value)
    with pytest.raises(ConfigError, match=r"^unknown config key"):
        compose(["app=malt", override])


def test_keys_that_exist_or_sit_in_a_mapping_pass():
    check_keys(
        ["app=routing", "app.probe.timeout_ms=100", "level=2", "hydra.verbose=true"], NetGaugeConfig
    )
    check_keys(["agent=mcp_example", "+agent.env.MY_MODEL=x", "agent.command=[a]"], NetGaugeConfig)
    check_keys(["model=smollm2", "+model.headers_env.X-Key=VAR", "agent=zero_shot"], NetGaugeConfig)
    check_keys(
        ["app=malt_google", "app.topology.path=/x"], NetGaugeConfig
    )  # malt's schema, inherited


def _cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return lines[0]


@pytest.mark.slow
def test_the_run_command_answers_a_mistyped_key_in_one_line(tmp_path):
    got = _one_line(_cli("-m", "pipeline.run", "app=malt", "agnt=oracle", f"data_dir={tmp_path}"))
    assert got.startswith("error: unknown config key 'agnt' (did you mean 'agent'?)")
    got = _one_line(_cli("-m", "pipeline.run", "app=malt", "data_dir=/proc/nope"))
    assert got == "error: data_dir=/proc/nope: cannot create /proc/nope: No such file or directory"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (["agent=mcp_example"], "error: agent 'mcp_example' (kind: mcp) has no agent.command"),
        (["agent=a2a_example"], "error: agent 'a2a_example' (kind: a2a) has no agent.url"),
        (
            ["agent=mcp_example", "agent.command=[python,x.py]", "agent.pass_env=[NG_UNSET_26]"],
            "error: agent.pass_env names NG_UNSET_26, not set in NetGauge's environment",
        ),
        (
            [
                "agent=zero_shot",
                "model=smollm2",
                "model.endpoint=external",
                "model.base_url=http://127.0.0.1:9/v1",
            ],
            "error: cannot reach the model endpoint http://127.0.0.1:9/v1 (ConnectError",
        ),
    ],
)
def test_what_needs_no_work_fails_before_any_query_is_generated(tmp_path, agent, message):
    """On routing, whose queries take a live lab each: no lab, no shard, seconds."""
    started = time.monotonic()
    done = _cli("-m", "pipeline.run", "app=routing", *agent, "queries=1", f"data_dir={tmp_path}")
    assert _one_line(done).startswith(message)
    assert time.monotonic() - started < 20
    assert not (tmp_path / "results").exists()


def test_a_plan_refuses_an_agent_that_could_not_play(tmp_path):
    with pytest.raises(ConfigError, match=r"has no agent\.url"):
        load_plan("smoke", tmp_path, axes={"agents": ["a2a_example"], "apps": ["malt"]})


def test_a_dead_endpoint_is_one_environment_failure():
    with pytest.raises(EnvironmentFailure, match=r"^cannot reach the model endpoint http://127"):
        reach("http://127.0.0.1:9/v1")
    cfg = compose(
        ["agent=a2a_example", "agent.url=http://127.0.0.1:9", "+agent.headers_env.X=NG_UNSET_26"]
    )
    with pytest.raises(ConfigError, match=r"agent\.headers_env reads NG_UNSET_26"):
        check_cell(cfg)


def test_a_summary_of_a_grid_the_data_has_no_plan_for_is_one_line(tmp_path, capsys):
    from analysis.__main__ import main

    assert main(["--data-dir", str(tmp_path), "summary", "--grid", "default"]) == 2
    assert main(["--data-dir", str(tmp_path), "sql", "SELECT * FROM nope"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"error: no plan 'default' in {tmp_path}")
    assert lines[1].startswith("error: Catalog Error: Table with name nope does not exist!")


@pytest.mark.slow
def test_the_mcp_command_refuses_a_time_limit_that_is_no_number(tmp_path):
    argv = ["-m", "pipeline.mcp", "app=malt", "turn_timeout_s=abc", f"data_dir={tmp_path}"]
    got = _one_line(_cli(*argv))
    assert got == "error: turn_timeout_s='abc' is not a number of seconds (e.g. turn_timeout_s=600)"
    assert not (tmp_path / "results").exists()
