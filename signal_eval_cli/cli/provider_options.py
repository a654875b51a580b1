"""The model-provider options of ``signal-eval run`` (and ``matrix``, ``scenario``).

``--provider openai:<model>`` (or ``provider:`` in the dataset's harness params)
makes the harness call a real model; ``--record`` records every call into the
dataset's cassette, ``--record-missing`` only the calls it lacks, ``--replay``
(the default when the cassette exists) never touches the network.
``--max-connections`` bounds the calls in flight per provider, ``--price`` overrides
the price table, ``--judge-model`` sets the default ``llm.judge`` model. What they
mean is the library's :class:`~signal_eval_cli.run_config.ProviderPolicy`; this module
only declares them, once for every command (:func:`provider_options`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from signal_eval_cli.run_config import ProviderPolicy, default_cassette, stop_proxy

__all__ = [
    "JudgeModelOpt",
    "LiveOpt",
    "MaxConnectionsOpt",
    "PriceOpt",
    "ProviderFlags",
    "ProviderOpt",
    "ProviderPolicy",
    "RecordMissingOpt",
    "RecordOpt",
    "ReplayOpt",
    "default_cassette",
    "provider_options",
    "stop_proxy",
]

ProviderFlags = ProviderPolicy
"""The old name of :class:`~signal_eval_cli.run_config.ProviderPolicy`."""

ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="Model provider for the harness: openai:<model>, anthropic:<model> or cassette:<path>.",
    ),
]
RecordOpt = Annotated[
    bool,
    typer.Option(
        "--record", help="Call the real provider and record every call into the cassette."
    ),
]
RecordMissingOpt = Annotated[
    bool,
    typer.Option(
        "--record-missing", help="Replay what the cassette has; record only the calls it lacks."
    ),
]
LiveOpt = Annotated[
    bool,
    typer.Option(
        "--live",
        help="Pass the harness's model calls through to the real API; record nothing, replay nothing.",
    ),
]
ReplayOpt = Annotated[
    bool,
    typer.Option(
        "--replay",
        help="Replay the cassette only, never the network (the default when it exists).",
    ),
]
MaxConnectionsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-connections",
        min=1,
        help="Model calls in flight per provider (default 32); halves when rate-limited, then recovers.",
    ),
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="Default llm.judge model (else the dataset's judge.model, else $SIGNAL_EVAL_JUDGE_MODEL).",
    ),
]


def _read_prices(values: list[str] | None) -> list[str] | None:
    """Each ``--price`` read when given: one read only once a model is priced went
    unread by a run that priced none (a replay, recorded traces), a typo with it."""
    from signal_eval_cli.errors import InputError
    from signal_eval_cli.pricing import parse_price

    for value in values or []:
        try:
            parse_price(value)
        except InputError as exc:
            raise typer.BadParameter(str(exc)) from None
    return values


PriceOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        callback=_read_prices,
        help="Override a model's price: MODEL=INPUT:OUTPUT in USD per 1M tokens (repeatable).",
    ),
]


_F = TypeVar("_F", bound=Callable[..., Any])
_OPTIONS: dict[str, tuple[Any, Any, str]] = {
    # parameter: (its option, its default, the ProviderPolicy field it sets)
    "provider": (ProviderOpt, None, "provider"),
    "record": (RecordOpt, False, "record"),
    "record_missing": (RecordMissingOpt, False, "record_missing"),
    "replay": (ReplayOpt, False, "replay"),
    "live": (LiveOpt, False, "live"),
    "max_connections": (MaxConnectionsOpt, None, "max_connections"),
    "judge_model": (JudgeModelOpt, None, "judge_model"),
    "price": (PriceOpt, None, "prices"),
}


def provider_options(*names: str, before: str) -> Callable[[_F], _F]:
    """Give the command the provider options ``names`` (declared here once, listed before
    its parameter ``before``) and a ``provider_policy``: the :class:`ProviderPolicy` they ask for."""

    def decorate(command: _F) -> _F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "provider_policy"]
        at = next(i for i, p in enumerate(own) if p.name == before)
        added = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=_OPTIONS[name][1],
                annotation=_OPTIONS[name][0],
            )
            for name in names
        ]
        after = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own[at:]]
        parameters = [*own[:at], *added, *after]

        @functools.wraps(command)
        def with_policy(*args: Any, **kwargs: Any) -> Any:
            given = {_OPTIONS[name][2]: kwargs.pop(name) for name in names}
            given["prices"] = given.get("prices") or []
            return command(*args, provider_policy=ProviderPolicy(**given), **kwargs)

        with_policy.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_policy.__annotations__ = {p.name: p.annotation for p in parameters}  # what Typer reads
        return with_policy  # type: ignore[return-value]

    return decorate
