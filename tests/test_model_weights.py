"""Converted model weights: where the embedded GGUF's Hugging Face folder goes, per data
directory or once for the data directories sharing a cache (pipeline/serving/models.py).
The real conversion runs where the real server starts (tests/test_serving.py,
tests/test_llm_pipeline.py); here it only records its destination."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cells import CACHE_DIR_ENV
from pipeline.serving import models


def test_converted_weights_are_shared_by_data_directories_that_share_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under $NETGAUGE_CACHE_DIR the GGUF is converted once for every data directory, into a
    folder named by what it depends on; without it, into each data directory (the real
    conversion runs where the real server starts: here it only records its destination)."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"weights")
    converted: list[Path] = []

    def convert(src: Path, dest: Path, *, dtype: str, venv: object) -> Path:
        assert src == gguf
        (dest / "config.json").parent.mkdir(parents=True)
        (dest / "config.json").write_text("{}")
        converted.append(dest)
        return dest

    monkeypatch.setattr(models, "locate_gguf", lambda package, filename, venv=None: gguf)
    monkeypatch.setattr(models, "convert_gguf", convert)
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    one = models.ensure_model(tmp_path / "d1", weights_dir="w")
    assert one == tmp_path / "d1" / "models" / "w"
    assert models.ensure_model(tmp_path / "d1", weights_dir="w") == one
    assert models.ensure_model(tmp_path / "d2", weights_dir="w") == tmp_path / "d2" / "models" / "w"
    assert len(converted) == 2
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    shared = models.ensure_model(tmp_path / "d3", weights_dir="w")
    assert shared.parent == tmp_path / "cache" / "models" and shared.name.startswith("w-")
    assert models.ensure_model(tmp_path / "d4", weights_dir="w") == shared
    assert len(converted) == 3
    other = models.ensure_model(tmp_path / "d4", weights_dir="w", dtype="float32")
    assert other != shared and len(converted) == 4  # another dtype is another folder
    gguf.write_bytes(b"other weights")  # other bytes: converted again
    assert models.ensure_model(tmp_path / "d4", weights_dir="w") not in (shared, other)
