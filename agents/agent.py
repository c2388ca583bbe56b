"""The agent: a workflow paired with a model, resolved from a spec string."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.model import Capabilities, Model


@dataclass(frozen=True)
class ModelSpec:
    """``provider/name``: ``openai/gpt-4o-mini``, ``hf/Qwen/Qwen2.5-0.5B``, ``scripted/oracle``."""

    provider: str
    name: str

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        provider, sep, name = spec.partition("/")
        if not sep or not provider or not name:
            raise ValueError(
                f"model spec {spec!r} must look like provider/name "
                "(e.g. scripted/oracle, openai/gpt-4o-mini, local/qwen2.5-0.5b)"
            )
        return cls(provider, name)

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def resolve_model(
    spec: str, options: dict[str, Any] | None = None, run_dir: Path | None = None
) -> Model:
    """Instantiate the model a spec string names (imports the provider on first use).

    The provider contract: ``factory(name, run_dir=..., **options)``; ``run_dir`` is the run
    the model serves (None outside a run), where a provider may keep what it writes (the
    embedded model's server log). Providers that write nothing ignore it.

    ``price_in`` / ``price_out`` (USD per million tokens) are the run's, not the provider's:
    they set the model's declared price (:mod:`raleval.agents.pricing`).
    """
    from raleval.agents.pricing import model_price, split_price_options, with_price

    parsed = ModelSpec.parse(spec)
    price_options, own = split_price_options(dict(options or {}))
    price = model_price(parsed.provider, parsed.name, price_options)
    factory = registry.models.get(parsed.provider)
    return with_price(factory(parsed.name, run_dir=run_dir, **own), price)


def declared_capabilities(spec: str, options: dict[str, Any] | None = None) -> Capabilities | None:
    """What the model ``spec`` names declares about its decoding (tool calls, JSON schemas,
    prefill), read from the providers' declarations without loading it or asking its server:
    what the run header records and ``raleval run`` says before the first episode. None for a
    provider that declares nothing ahead (a plugin's)."""
    parsed = ModelSpec.parse(spec)
    given = dict(options or {})
    if parsed.provider == "local":
        from raleval.agents.local import LOCAL_MODELS

        weights = LOCAL_MODELS.get(parsed.name)
        return Capabilities(
            prefill=bool(given.get("prefill", True)),
            tool_calls=str(given.get("tool_calls", weights.tool_calls if weights else "schema")),
            json_schema=bool(given.get("json_schema", True)),
        )
    if parsed.provider in ("openai", "openai-compatible"):
        default = "native" if parsed.provider == "openai" else "auto"
        mode = str(given.get("tool_calls", default))
        return Capabilities(
            prefill=bool(given.get("prefill", False)),
            tool_calls=mode,
            json_schema=bool(given.get("json_schema", False)) or mode == "schema",
        )
    if parsed.provider == "scripted":
        from raleval.agents.scripted import ScriptedModel

        return ScriptedModel.capabilities
    if parsed.provider in ("hf", "vllm"):
        return Capabilities(tool_calls="none")
    return None
