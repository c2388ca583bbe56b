"""What a model's tokens cost: a built-in table for common API models, ``-M price_in=...
-M price_out=...`` (US dollars per million tokens) for any other, and 0 for models that run on
this machine, whose compute seconds are recorded instead (``raleval.workflows.common``).

The table holds standard-tier list prices per million tokens (input, output) as OpenAI's
pricing page gave them in 2025-2026; prices change, so a run that needs exact money says its
own with ``-M``, and ``-M`` always wins over the table. Cached-input discounts and batch prices
are not modelled: every prompt token is charged at the input price.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from raleval.config import ConfigError
from raleval.model import LOCAL_PRICE, Price

TABLE_SOURCE = "built-in table (OpenAI list prices, 2025-2026)"

# provider -> model name (or the prefix of a dated snapshot) -> (input, output) USD per 1M tokens
BUILT_IN: dict[str, dict[str, tuple[float, float]]] = {
    "openai": {
        "gpt-5": (1.25, 10.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4o": (2.50, 10.00),
        "gpt-4o-mini": (0.15, 0.60),
        "o3": (2.00, 8.00),
        "o3-mini": (1.10, 4.40),
        "o4-mini": (1.10, 4.40),
        "gpt-3.5-turbo": (0.50, 1.50),
    },
}

# Providers whose model runs on this machine (or is a script): tokens cost nothing.
LOCAL_PROVIDERS = frozenset({"local", "scripted", "hf", "vllm"})

PRICE_OPTIONS = ("price_in", "price_out")


def _table_price(provider: str, name: str) -> Price | None:
    """The table's entry for ``name`` or the longest entry it is a dated snapshot of
    (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``)."""
    table = BUILT_IN.get(provider, {})
    matches = [k for k in table if name == k or name.startswith(f"{k}-")]
    if not matches:
        return None
    best = max(matches, key=len)
    return Price(*table[best], source=f"{TABLE_SOURCE}: {best}")


def _per_mtok(options: dict[str, Any], key: str) -> float:
    value = options[key]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"-M {key} must be USD per million tokens, not {value!r}") from None
    if number < 0 or number != number:
        raise ConfigError(f"-M {key} must be a non-negative number, not {value!r}")
    return number


def model_price(provider: str, name: str, options: dict[str, Any]) -> Price | None:
    """The price of ``provider/name``: ``-M price_in/price_out`` (both, or neither), else the
    built-in table, else 0 for a model on this machine, else None (unknown)."""
    given = [k for k in PRICE_OPTIONS if k in options]
    if given:
        if len(given) == 1:
            missing = next(k for k in PRICE_OPTIONS if k not in options)
            raise ConfigError(f"-M {given[0]} needs -M {missing} as well (USD per 1M tokens)")
        return Price(
            _per_mtok(options, "price_in"), _per_mtok(options, "price_out"), source="-M options"
        )
    if provider in LOCAL_PROVIDERS:
        return LOCAL_PRICE
    return _table_price(provider, name)


def split_price_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` as (the price options, the provider's own)."""
    price = {k: v for k, v in options.items() if k in PRICE_OPTIONS}
    return price, {k: v for k, v in options.items() if k not in PRICE_OPTIONS}


def with_price(model: Any, price: Price | None) -> Any:
    """``model`` declaring ``price`` in its capabilities."""
    model.capabilities = dataclasses.replace(model.capabilities, price=price)
    return model
