#!/usr/bin/env bash
# GPU vLLM for `kind: vllm` models (e.g. conf/model/qwen2_5_7b.yaml) in a venv of its own,
# .venv-vllm-gpu, installed only on a machine where `nvidia-smi -L` lists a GPU (gpu_count
# in scripts/lib.sh); anywhere else this step does nothing and the CPU engine of
# 10-vllm.sh stays the only one. `kind: vllm` models use this venv unless their `venv`
# key (or $NETGAUGE_VLLM_GPU_VENV) names another. Idempotent: a stamp holds a hash of
# this script, so the work reruns only when a pin changes.
#
# NETGAUGE_SETUP_DRY_RUN=1 says what it would install instead of installing: the tests
# drive the decision with a fake nvidia-smi on PATH (no machine of ours has a GPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

VENV=${NETGAUGE_VLLM_GPU_VENV:-.venv-vllm-gpu}
STAMP="$VENV/.netgauge-vllm-gpu-installed"
# The GPU build of the vLLM release the CPU engine runs, so both serve alike; torch and
# transformers as vllm 0.32.0 resolves them (torch's PyPI wheel for Linux is the CUDA one).
VLLM=vllm==0.32.0
TORCH=torch==2.13.0
TRANSFORMERS=transformers==5.19.0

gpus=$(gpu_count)
((gpus > 0)) || exit 0

want=$(sha256sum scripts/setup.d/15-vllm-gpu.sh | cut -c1-16)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    exit 0
fi
if [[ "${NETGAUGE_SETUP_DRY_RUN:-}" == 1 ]]; then
    echo "setup-vllm-gpu: $gpus GPU(s) found; would install $VLLM $TORCH $TRANSFORMERS into $VENV"
    exit 0
fi

started=$SECONDS
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup-vllm-gpu: $gpus GPU(s) found; creating $VENV with /usr/bin/python3"
    /usr/bin/python3 -m venv "$VENV"
fi
echo "setup-vllm-gpu: installing $VLLM (several GB: torch with CUDA)"
"$VENV/bin/python" -m pip install -q --no-input --upgrade pip
"$VENV/bin/python" -m pip install -q --no-input "$VLLM" "$TORCH" "$TRANSFORMERS"

# Fail now, not at the first server start: vLLM imports, and torch is a CUDA build that
# sees the GPUs (a CPU wheel from a local find-links would not).
"$VENV/bin/python" - <<'PY' || exit 1
import sys
import torch, vllm  # noqa: F401
if not torch.version.cuda:
    sys.exit(f"setup-vllm-gpu: torch {torch.__version__} is not a CUDA build")
if not torch.cuda.is_available():
    sys.exit("setup-vllm-gpu: torch sees no GPU (driver and CUDA runtime mismatch?)")
PY
"$VENV/bin/python" -m pip freeze --all > "$VENV/netgauge-freeze.txt"
echo "$want" > "$STAMP"
echo "setup-vllm-gpu: $VENV ready in $((SECONDS - started)) s ($(du -sh "$VENV" | cut -f1))"
