"""The GPU engine's install decision, at our own boundary: a fake `nvidia-smi` on PATH.

No machine of ours has a GPU, so scripts/setup.d/15-vllm-gpu.sh runs with
NETGAUGE_SETUP_DRY_RUN=1 (it says what it would install) and a PATH holding only the tools
it needs and, per case, a fake `nvidia-smi`. What runs on a real GPU is not tested here.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.config import ROOT
from pipeline.errors import EnvironmentFailure
from pipeline.serving.config import load_model_config
from pipeline.serving.models import GPU_VENV, engine_venv, vllm_python
from pipeline.serving.server import ManagedServer, open_endpoint

STEP = ROOT / "scripts" / "setup.d" / "15-vllm-gpu.sh"
TOOLS = ("dirname", "sha256sum", "cut", "cat", "grep", "timeout")
TWO_GPUS = (
    "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0c1d)\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-9f2e)\n"
)
ONE_GPU_WITH_MIG = (
    "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d3a)\n"
    "  MIG 3g.20gb     Device  0: (UUID: MIG-0b6e)\n"
    "  MIG 3g.20gb     Device  1: (UUID: MIG-7c1f)\n"
)


def run_step(tmp_path: Path, nvidia_smi: str | None, venv: Path | None = None):
    """The step with a PATH of the tools it needs plus, if given, a fake nvidia-smi whose
    body is `nvidia_smi` (it records its arguments in calls.txt)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in TOOLS:
        target = bin_dir / tool
        if not target.exists():
            target.symlink_to(shutil.which(tool))
    fake = bin_dir / "nvidia-smi"
    fake.unlink(missing_ok=True)
    if nvidia_smi is not None:
        fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls.txt\n{nvidia_smi}\n')
        fake.chmod(0o755)
    env = {
        "PATH": str(bin_dir),
        "NETGAUGE_SETUP_DRY_RUN": "1",
        "NETGAUGE_VLLM_GPU_VENV": str(venv or tmp_path / "venv"),
    }
    return subprocess.run(["/bin/bash", str(STEP)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize(
    "case, body",
    [
        ("no nvidia-smi", None),
        ("no driver", "echo 'NVIDIA-SMI has failed because it could not communicate with "
                      "the NVIDIA driver.'; exit 9"),
        ("no device", "echo 'No devices were found'; exit 6"),
        ("empty list", "exit 0"),
    ],
)  # fmt: skip
def test_no_gpu_installs_nothing(tmp_path: Path, case: str, body: str | None) -> None:
    done = run_step(tmp_path, body)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), case
    assert not (tmp_path / "venv").exists()


@pytest.mark.parametrize("listing, gpus", [(TWO_GPUS, 2), (ONE_GPU_WITH_MIG, 1)])
def test_a_listed_gpu_installs_gpu_vllm_in_its_own_venv(
    tmp_path: Path, listing: str, gpus: int
) -> None:
    done = run_step(tmp_path, f"printf '{listing}'")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"setup-vllm-gpu: {gpus} GPU(s) found; would install vllm==0.32.0 torch==2.13.0 "
        f"transformers==5.19.0 into {tmp_path / 'venv'}\n"
    )
    assert (tmp_path / "calls.txt").read_text() == "-L\n"
    assert not (tmp_path / "venv").exists()  # a dry run


def test_an_installed_gpu_engine_is_not_installed_again(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    venv.mkdir()
    stamp = hashlib.sha256(STEP.read_bytes()).hexdigest()[:16]
    (venv / ".netgauge-vllm-gpu-installed").write_text(stamp + "\n")
    done = run_step(tmp_path, f"printf '{TWO_GPUS}'", venv)
    assert (done.returncode, done.stdout) == (0, "")


def test_gpu_models_use_the_gpu_venv_and_cpu_models_the_cpu_one(monkeypatch) -> None:
    monkeypatch.delenv("NETGAUGE_VLLM_GPU_VENV", raising=False)
    monkeypatch.delenv("NETGAUGE_VLLM_VENV", raising=False)
    assert engine_venv("vllm") == GPU_VENV == ROOT / ".venv-vllm-gpu"
    assert engine_venv("vllm_cpu") == ROOT / ".venv-vllm"
    monkeypatch.setenv("NETGAUGE_VLLM_GPU_VENV", "/opt/gpu-vllm")
    assert engine_venv("vllm") == Path("/opt/gpu-vllm")
    assert engine_venv("vllm_cpu") == ROOT / ".venv-vllm"
    monkeypatch.delenv("NETGAUGE_VLLM_GPU_VENV")
    endpoint = open_endpoint(load_model_config("qwen2_5_7b"), "unused")
    assert isinstance(endpoint, ManagedServer) and Path(endpoint.venv) == GPU_VENV


def test_a_missing_gpu_engine_names_the_gpu_setup_step(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NETGAUGE_VLLM_GPU_VENV", str(tmp_path / "none"))
    with pytest.raises(
        EnvironmentFailure, match=r"nvidia-smi -L.*15-vllm-gpu.sh.*NETGAUGE_VLLM_GPU_VENV"
    ):
        vllm_python(kind="vllm")
    monkeypatch.setenv("NETGAUGE_VLLM_VENV", str(tmp_path / "none-cpu"))
    with pytest.raises(EnvironmentFailure, match=r"10-vllm.sh.*NETGAUGE_VLLM_VENV"):
        vllm_python(kind="vllm_cpu")
