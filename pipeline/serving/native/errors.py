"""The pipeline's typed failures for what a native provider's SDK raised.

    a key refused (HTTP 401, 403)     KeyRejected, a ConfigError: the cell stops, naming
                                      the variable (never the key); what it played is kept
    a model not served (404)          ModelNotFound (pipeline/serving/client.py)
    rate-limited, overloaded (429,    Overloaded, an EnvironmentFailure, once the SDK's
      529) and 5xx                    bounded retries are spent: the episode is env_error
    any other 4xx                     RequestRejected: env_error, or fewer past turns when
                                      the prompt was too long (pipeline/llm/agent.py)
    nothing answers, a broken body    EnvironmentFailure

Server messages are cut to MESSAGE_CHARS and the API key is masked in them, so a hostile
server that echoes it puts it in no log and no result.
"""

from __future__ import annotations

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.serving.client import ModelNotFound, RequestRejected

MESSAGE_CHARS = 500


class KeyRejected(ConfigError):
    """The API refused the key (HTTP 401 or 403)."""


class Overloaded(EnvironmentFailure):
    """The API said it is rate-limited or overloaded (429, 529) or failed (5xx) on every
    attempt the retries allowed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def masked(message: object, secret: str | None) -> str:
    text = str(message)
    if secret:
        text = text.replace(secret, "***")
    return text[:MESSAGE_CHARS] or "(empty body)"


def status_error(
    where: str,
    model: str,
    status: int,
    message: object,
    key_variable: str,
    *,
    attempts: int,
    secret: str | None = None,
) -> Exception:
    """The typed failure of an HTTP error status (see the module docstring)."""
    said = masked(message, secret)
    at = f"model endpoint {where} (HTTP {status})"
    if status in (401, 403):
        return KeyRejected(
            f"{at} refused the API key in ${key_variable}: {said}; check the key and its access"
        )
    if status == 404:
        return ModelNotFound(
            f"{at} does not serve model '{model}': {said}; check the model config's served_name"
        )
    if status in (429, 529) or status >= 500:
        why = "is rate-limited or overloaded" if status in (429, 529) else "failed"
        return Overloaded(f"{at} {why} after {attempts} attempts: {said}", status)
    return RequestRejected(f"{at} rejected the request: {said}", status, said)


def transport_error(where: str, err: BaseException, attempts: int) -> EnvironmentFailure:
    """Nothing answered (or not in time, or not in the API's shape) on any attempt."""
    return EnvironmentFailure(
        f"cannot reach the model endpoint {where} ({type(err).__name__}: "
        f"{masked(err, None)}) after {attempts} attempts; is the server running?"
    )
