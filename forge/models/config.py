"""Models named the way a person types them: ``openai:MODEL`` or ``scripted:FILE``.

The endpoint of ``openai:`` models is ``base_url`` (default ``FORGE_MODEL_BASE_URL``,
else OpenAI's own) and its key comes from the environment only, ``FORGE_MODEL_API_KEY``
then ``OPENAI_API_KEY``, so it never appears in a command line or a process list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError
from forge.models.openai import OpenAICompatibleModel
from forge.models.port import ModelPort
from forge.models.scripted import ScriptedModel

__all__ = ["DEFAULT_BASE_URL", "Endpoint", "ModelSpecError", "model_from_spec"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("FORGE_MODEL_API_KEY", "OPENAI_API_KEY")


class ModelSpecError(ForgeError, ValueError):
    code = "invalid_model_spec"


@dataclass(frozen=True)
class Endpoint:
    """Where ``openai:`` models are reached, and on what terms."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    timeout_s: float = 60.0
    price_per_1k_tokens: float | None = None

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        *,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        price_per_1k_tokens: float | None = None,
    ) -> Endpoint:
        key = next((environ[name] for name in KEY_VARIABLES if environ.get(name)), None)
        url = base_url or environ.get("FORGE_MODEL_BASE_URL") or DEFAULT_BASE_URL
        return cls(url, key, timeout_s, price_per_1k_tokens)


def model_from_spec(spec: str, endpoint: Endpoint | None = None) -> ModelPort:
    """The model ``spec`` names. Raises ``ModelSpecError`` for another shape, and
    ``ScriptError`` for a script file that cannot be read."""
    kind, _, rest = spec.partition(":")
    if kind == "openai" and rest:
        endpoint = endpoint or Endpoint()
        return OpenAICompatibleModel(
            endpoint.base_url,
            rest,
            endpoint.api_key,
            timeout_s=endpoint.timeout_s,
            price_per_1k_tokens=endpoint.price_per_1k_tokens,
        )
    if kind == "scripted" and rest:
        return ScriptedModel.from_file(Path(rest))
    raise ModelSpecError(f"a model is openai:MODEL or scripted:FILE, not {spec!r}")
