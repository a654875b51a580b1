"""``make_provider("openai:gpt-4o", **options)``: a provider from a spec string.

Specs: ``openai:<model>`` (any OpenAI-compatible endpoint: ``OPENAI_BASE_URL``,
``OPENAI_API_KEY``), ``anthropic:<model>`` (``ANTHROPIC_BASE_URL``,
``ANTHROPIC_API_KEY``), ``cassette:<path>`` (replay only).

A real provider is built as ``Recording(Reliable(HTTP provider))``: the HTTP call
makes one attempt, :class:`ReliableProvider` adds retries, the adaptive
``max_connections`` limit and the timeout, and a cassette (when given) records or
replays. ``mode`` picks what the cassette does:

========================  ===================================================
``auto`` (default)        replay when the cassette file exists, else call live
``replay``                cassette only, never the network (no key needed)
``record``                call live and record every call
``record-missing``        replay what is recorded, record the rest
``live``                  ignore the cassette
========================  ===================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.paths import resolve_from
from signal_eval_cli.providers.base import Provider
from signal_eval_cli.providers.pricing import PriceTable, default_prices
from signal_eval_cli.providers.reliability import AdaptiveLimiter, ReliableProvider, RetryPolicy

__all__ = ["DEFAULT_MAX_CONNECTIONS", "KINDS", "MODES", "make_provider", "split_spec"]

KINDS = ("openai", "anthropic", "cassette")
MODES = ("auto", "replay", "record", "record-missing", "live")
DEFAULT_MAX_CONNECTIONS = 32
DEFAULT_TIMEOUT = 60.0

_HTTP_OPTIONS = ("api_key", "base_url", "stream", "max_tokens", "transport", "extra_body")
_OPTIONS = frozenset(
    {
        *_HTTP_OPTIONS,
        "timeout",
        "max_connections",
        "max_retries",
        "retry_base_delay",
        "retry_max_delay",
        "max_retry_after",
        "prices",
        "cassette",
        "mode",
        "base_dir",
        "latency_scale",
    }
)


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` → ``("openai", "gpt-4o")``, with a clear error otherwise."""
    kind, sep, rest = str(spec).partition(":")
    if not sep or kind not in KINDS:
        raise InputError(
            f"provider '{spec}': expected openai:<model>, anthropic:<model> or cassette:<path>"
        )
    if not rest:
        raise InputError(
            f"provider '{spec}': name the {'path' if kind == 'cassette' else 'model'} after ':'"
        )
    return kind, rest


def make_provider(spec: str, **options: Any) -> Provider:
    """Build the provider ``spec`` names.

    Args:
        spec: ``openai:<model>``, ``anthropic:<model>`` or ``cassette:<path>``.
        **options: ``api_key``/``base_url`` (default: the environment), ``timeout``
            (seconds per attempt, 60), ``stream`` (False), ``max_tokens``,
            ``max_connections`` (32), ``max_retries`` (4), ``retry_base_delay`` (0.5 s),
            ``retry_max_delay`` (20 s), ``max_retry_after`` (60 s), ``prices`` (model →
            ``{input, output}`` USD per 1M tokens), ``cassette`` (path), ``mode``
            (see the module doc), ``base_dir`` (for relative paths), ``transport``
            (``http``, our own client; ``aiohttp``, its former name, is taken too),
            ``extra_body`` (merged into each request).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise InputError(
            f"provider '{spec}': unknown option(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(_OPTIONS))})"
        )
    kind, rest = split_spec(spec)
    base_dir = Path(options["base_dir"]) if options.get("base_dir") else None
    if kind == "cassette":
        from signal_eval_cli.providers.recording import RecordingProvider

        return RecordingProvider.replaying(
            resolve_from(rest, base_dir), latency_scale=float(options.get("latency_scale") or 0.0)
        )
    mode = str(options.get("mode") or "auto")
    if mode not in MODES:
        raise InputError(f"provider '{spec}': mode must be one of {', '.join(MODES)}, got {mode!r}")
    cassette_option = options.get("cassette")
    if cassette_option is None:
        if mode in ("replay", "record", "record-missing"):
            raise InputError(f"provider '{spec}': mode '{mode}' needs a cassette path")
        return _real(kind, rest, options)
    path = resolve_from(str(cassette_option), base_dir)
    if mode == "auto":
        mode = "replay" if path.is_file() else "live"
    if mode == "live":
        return _real(kind, rest, options)
    # the recording provider: imported by a run with a cassette (a live one has none)
    from signal_eval_cli.providers.cassette import CassetteFile
    from signal_eval_cli.providers.recording import RecordingProvider

    if mode == "replay":
        if not path.is_file():
            raise InputError(
                f"{path}: cassette not found: record it first with --record (needs {_key_env(kind)})"
            )
        return RecordingProvider(CassetteFile(path), mode="replay", name=kind)
    return RecordingProvider(CassetteFile(path), _real(kind, rest, options), mode=mode, name=kind)  # type: ignore[arg-type]


def _key_env(kind: str) -> str:
    return "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"


def _number(options: Mapping[str, Any], name: str, default: float, *, minimum: float = 0) -> float:
    value = options.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise InputError(f"provider option {name} must be a number >= {minimum:g}, got {value!r}")
    return float(value)


def _real(kind: str, model: str, options: Mapping[str, Any]) -> ReliableProvider:
    timeout = _number(options, "timeout", DEFAULT_TIMEOUT, minimum=0.001)
    max_connections = int(_number(options, "max_connections", DEFAULT_MAX_CONNECTIONS, minimum=1))
    prices: PriceTable = default_prices()
    overrides = options.get("prices")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise InputError(f"provider option prices must map models to prices, got {overrides!r}")
        prices = prices.with_overrides(overrides)
    http_options = {k: options[k] for k in _HTTP_OPTIONS if options.get(k) is not None}
    inner: Any
    if kind == "openai":
        from signal_eval_cli.providers.openai_provider import OpenAIProvider

        inner = OpenAIProvider(
            model, timeout=timeout, max_connections=max_connections, prices=prices, **http_options
        )
    else:
        from signal_eval_cli.providers.anthropic_provider import AnthropicProvider

        inner = AnthropicProvider(
            model, timeout=timeout, max_connections=max_connections, prices=prices, **http_options
        )
    default = RetryPolicy()
    policy = RetryPolicy(
        max_retries=int(_number(options, "max_retries", default.max_retries)),
        base_delay=_number(options, "retry_base_delay", default.base_delay),
        max_delay=_number(options, "retry_max_delay", default.max_delay),
        max_retry_after=_number(options, "max_retry_after", default.max_retry_after),
    )
    return ReliableProvider(
        inner,
        policy=policy,
        limiter=AdaptiveLimiter(max_connections),
        timeout=timeout,
        label=f"{kind}:{model}",
        secrets=inner.secrets,
    )
