"""Model prices as data: ``data/prices.yaml`` plus per-model overrides.

Prices are USD per million tokens. ``cost`` on ``provider:end`` is
``input_tokens * input / 1e6 + output_tokens * output / 1e6``; a model with no
price costs ``0.0`` (and :meth:`PriceTable.lookup` says so with ``None``).
"""

from __future__ import annotations

import functools
import math
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from signal_eval_cli.errors import InputError

__all__ = ["Price", "PriceTable", "default_prices", "parse_price"]

_SEPARATORS = ("-", "@", ":", ".")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input and output tokens."""

    input: float
    output: float

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000

    @classmethod
    def from_data(cls, model: str, data: Any) -> Price:
        """``{input, output}``, ``[input, output]`` or ``"input:output"``."""
        try:
            if isinstance(data, Mapping):
                value = cls(float(data["input"]), float(data["output"]))
            elif isinstance(data, str):
                value = parse_price(f"{model}={data}")[1]
            elif isinstance(data, (list, tuple)) and len(data) == 2:
                value = cls(float(data[0]), float(data[1]))
            else:
                raise ValueError("expected {input: N, output: N}")
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"price of '{model}': {exc} (USD per 1M tokens, e.g. {{input: 2.5, output: 10}})"
            ) from None
        if value.input < 0 or value.output < 0:
            raise InputError(f"price of '{model}' must not be negative")
        return value


def parse_price(text: str) -> tuple[str, Price]:
    """``MODEL=INPUT:OUTPUT`` (USD per 1M tokens), as given to ``--price``."""
    model, sep, rest = text.partition("=")
    parts = rest.split(":")
    if not sep or not model or len(parts) != 2:
        raise InputError(f"--price expects MODEL=INPUT:OUTPUT (USD per 1M tokens), got {text!r}")
    try:
        price = Price(float(parts[0]), float(parts[1]))
    except ValueError:
        raise InputError(f"--price {text!r}: prices must be numbers") from None
    if not (math.isfinite(price.input) and math.isfinite(price.output)):
        raise InputError(f"--price {text!r}: prices must be finite numbers")
    if price.input < 0 or price.output < 0:
        raise InputError(f"--price {text!r}: prices must not be negative")
    return model, price


class PriceTable:
    """Looks up a model's price: exact name, then the longest matching prefix."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self._prices = dict(prices)
        self._by_length = sorted(self._prices, key=len, reverse=True)
        self._cache: dict[str, Price | None] = {}

    def __contains__(self, model: str) -> bool:
        return self.lookup(model) is not None

    def lookup(self, model: str | None) -> Price | None:
        if not model:
            return None
        if model in self._cache:
            return self._cache[model]
        name = model.rsplit("/", 1)[-1]  # "openai/gpt-4o" (LiteLLM, OpenRouter style)
        found = self._prices.get(model) or self._prices.get(name)
        if found is None:
            for key in self._by_length:
                if name.startswith(key) and name[len(key)] in _SEPARATORS:
                    found = self._prices[key]
                    break
        self._cache[model] = found
        return found

    def cost(self, model: str | None, input_tokens: float, output_tokens: float) -> float:
        price = self.lookup(model)
        return price.cost(input_tokens, output_tokens) if price is not None else 0.0

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> PriceTable:
        """A new table where ``overrides`` (model → price data or :class:`Price`) win."""
        if not overrides:
            return self
        merged = dict(self._prices)
        for model, data in overrides.items():
            merged[str(model)] = data if isinstance(data, Price) else Price.from_data(model, data)
        return PriceTable(merged)


@functools.lru_cache(maxsize=1)
def default_prices() -> PriceTable:
    """The table shipped in ``signal_eval_cli/data/prices.yaml``: read by libyaml when
    PyYAML has it (every run that calls a model reads it; the pure-Python reader took
    15-30 ms of a run's start), the same values either way (a test compares them). Read
    through the package's loader (``pkgutil.get_data``, from a wheel, a checkout or a
    zip alike): ``importlib.resources`` first imports its readers and ``zipfile``, 3 ms."""
    raw = pkgutil.get_data("signal_eval_cli", "data/prices.yaml")
    if raw is None:  # a loader that reads no data files: as a missing file, not "no prices"
        raise FileNotFoundError(
            "signal_eval_cli/data/prices.yaml: the package's loader cannot read it"
        )
    data = (
        yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    )
    models = data.get("models") or {}
    return PriceTable({str(m): Price.from_data(str(m), p) for m, p in models.items()})
