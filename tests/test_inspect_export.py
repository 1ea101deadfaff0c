"""`python -m analysis export-inspect`: episodes written with inspect_ai's own writer and
read back with its own reader (read_eval_log), over synthetic shards of the real schema."""

from __future__ import annotations

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

from analysis.__main__ import main
from analysis.synthetic import write_task_episodes
from pipeline.views import connect


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("inspect") / "data"
    write_task_episodes(path, {("qwen", "react"): 0.5, ("none", "oracle"): 1.0}, queries=4)
    return str(path)


def test_the_export_reads_back_with_inspects_reader(data: str, tmp_path, capsys) -> None:
    out = tmp_path / "logs"
    assert (
        main(
            ["--data-dir", data, "export-inspect", "--where", "agent = 'react'", "--out", str(out)]
        )
        == 0
    )
    written = capsys.readouterr().out.split()
    assert [p.rsplit("/", 1)[1] for p in written] == ["netllmbench_qwen_react_L1_s0_n4_base.eval"]
    assert len(list_eval_logs(str(out))) == 1
    log = read_eval_log(written[0])
    assert log.status == "success" and log.eval.task == "netgauge_netllmbench"
    con = connect(data)
    episodes = con.sql(
        "SELECT query_id, outcome, correct, safe, score, iterations FROM episodes "
        "WHERE agent = 'react' ORDER BY query_id"
    ).fetchall()
    assert [s.id for s in log.samples] == [e[0] for e in episodes]
    for sample, (qid, outcome, correct, safe, score, iterations) in zip(
        log.samples, episodes, strict=True
    ):
        verdict = sample.scores["netgauge"]
        assert verdict.value == {"correct": float(correct), "safe": float(safe), "score": score}
        assert verdict.explanation.startswith(outcome)
        assert verdict.metadata["iterations"] == iterations
        steps = con.sql(
            f"SELECT turn, reply, action, status, output, safe FROM steps "
            f"WHERE agent = 'react' AND query_id = '{qid}' ORDER BY turn"
        ).fetchall()
        replies = [m for m in sample.messages if isinstance(m, ChatMessageAssistant)]
        assert [m.text for m in replies] == [s[1] for s in steps]
        # every turn with an action: the command as a tool call, its step row as the result
        results = iter(m for m in sample.messages if isinstance(m, ChatMessageTool))
        for (turn, _reply, action, status, _out, step_safe), message in zip(
            steps, replies, strict=True
        ):
            if not action:
                assert message.tool_calls is None
                continue
            assert message.tool_calls[0].arguments == {"action": action}
            result = next(results)
            assert result.metadata["turn"] == turn and result.metadata["safe"] == step_safe
            assert (result.error is None) == (status == "ok")
        calls = con.sql(
            f"SELECT count(*) FROM calls WHERE agent = 'react' AND query_id = '{qid}'"
        ).fetchall()[0][0]
        kinds = [e.event for e in sample.events]
        assert kinds.count("model") == calls and kinds.count("info") == len(steps)
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert means["correct"] == pytest.approx(sum(e[2] for e in episodes) / len(episodes))


def test_an_empty_selection_is_an_error_naming_the_filter(data: str, tmp_path, capsys) -> None:
    args = ["--data-dir", data, "export-inspect", "--where", "agent = 'nobody'"]
    assert main([*args, "--out", str(tmp_path)]) == 2
    assert "agent = 'nobody'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
