"""The stage CLI that Snakemake rules call: help, and clear errors with exit code 2."""

from __future__ import annotations

import pytest

from pipeline.config import choices
from pipeline.stages import build_parser, main


def test_help_lists_every_stage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for stage in ("plan", "generate", "run", "run-model", "score"):
        assert stage in out


def test_unknown_app_exits_2_with_the_allowed_values(tmp_path, capsys):
    code = main(
        [
            "generate",
            "--app",
            "mat",
            "--level",
            "1",
            "--seed",
            "0",
            "--queries",
            "3",
            "--data-dir",
            str(tmp_path),
        ]
    )
    assert code == 2
    allowed = ", ".join(choices("app"))  # every app config, whatever apps there are
    assert f"unknown app 'mat' (did you mean 'malt'?); choose one of: {allowed}" in (
        capsys.readouterr().err
    )


def test_score_without_transcripts_names_the_missing_shard(tmp_path, capsys):
    args = [
        "--app",
        "malt",
        "--agent",
        "oracle",
        "--level",
        "1",
        "--seed",
        "0",
        "--queries",
        "2",
        "--data-dir",
        str(tmp_path),
    ]
    assert main(["generate", *[a for a in args if a not in ("--agent", "oracle")]]) == 0
    assert main(["score", *args]) == 2
    err = capsys.readouterr().err
    assert "missing transcripts shard" in err and "agent=oracle/level=1/seed=0" in err
