"""Evaluating assertions: look up each one's check, run it, time it, keep its verdict."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from typing import Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.outcome import AssertionResult
from signal_eval_cli.assertions.registry import lookup
from signal_eval_cli.errors import (
    CheckError,
    EvalError,
    InvalidAssertion,
    UnknownAssertionType,
)
from signal_eval_cli.regex_budget import RegexTimeout
from signal_eval_cli.signals import Signal, Trace

__all__ = [
    "Signals",
    "as_mapping",
    "evaluate_assertion",
    "evaluate_assertions",
    "evaluate_guarded",
]


def as_mapping(item: Any) -> dict[str, Any]:
    """Accept a plain dict (from YAML), a dataclass, or an object with ``to_dict()``."""
    if isinstance(item, Mapping):
        return dict(item)
    if hasattr(item, "to_dict"):
        return dict(item.to_dict())
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {k: v for k, v in dataclasses.asdict(item).items() if v is not None}
    raise TypeError(f"an assertion must be a mapping, got {type(item).__name__}")


Signals = Iterable[Signal | Mapping[str, Any]]
"""A plain list of signals (or their dicts), as seed 002's ``evaluateAssertion`` takes."""


def evaluate_assertion(
    assertion: Any, trace_or_ctx: Trace | EvalContext | Signals, **context: Any
) -> AssertionResult:
    """Evaluate one assertion against a trace, a list of signals, or an :class:`EvalContext`.

    Raises :class:`UnknownAssertionType` for a ``type`` nobody registered,
    :class:`InvalidAssertion` for a malformed one (datasets are checked when loaded) and
    :class:`CheckError` for a check that raised something of its own.
    """
    data = as_mapping(assertion)
    check = lookup(data.get("type"))
    ctx = _context(trace_or_ctx, context)
    started = time.perf_counter()
    try:
        outcome = check(data, ctx)
    except (UnknownAssertionType, InvalidAssertion, CheckError):  # a child's names its type
        raise
    except RegexTimeout as exc:  # a user's regex over its budget fails its assertion, any type
        elapsed = (time.perf_counter() - started) * 1000
        return AssertionResult(data, False, str(exc), evaluation_ms=elapsed, errored=True)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise InvalidAssertion(f"invalid {data.get('type')} assertion: {_describe(exc)}") from None
    except Exception as exc:
        raise CheckError(f"{data.get('type')} check raised {type(exc).__name__}: {exc}") from exc
    elapsed = (time.perf_counter() - started) * 1000
    return AssertionResult(
        assertion=data,
        passed=outcome.passed,
        message=outcome.message,
        expected=outcome.expected,
        actual=outcome.actual,
        trajectory=outcome.trajectory,
        evaluation_ms=elapsed,
        children=outcome.children,
        errored=outcome.errored,
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def evaluate_assertions(
    assertions: Iterable[Any], trace_or_ctx: Trace | EvalContext | Signals, **context: Any
) -> list[AssertionResult]:
    """Evaluate each assertion against the same trace (its indexes are built once)."""
    ctx = _context(trace_or_ctx, context)
    return [evaluate_assertion(a, ctx) for a in assertions]


def evaluate_guarded(assertion: Any, ctx: EvalContext) -> AssertionResult:
    """Always a result, for a run that must go on: a check that raises (a plugin's bug, an
    assertion no loader vetted) is that assertion erring, named with its error, not the end
    of the run and of every other case's result. An unknown type still raises: it is the
    caller's mistake, which loading a dataset finds before anything runs."""
    try:
        return evaluate_assertion(assertion, ctx)
    except UnknownAssertionType:
        raise
    except EvalError as exc:  # a check that raised, an assertion no loader vetted
        return AssertionResult(as_mapping(assertion), False, str(exc), errored=True)


def _context(trace_or_ctx: Trace | EvalContext | Signals, fields: Mapping[str, Any]) -> EvalContext:
    if isinstance(trace_or_ctx, EvalContext):
        ctx = trace_or_ctx
    elif isinstance(trace_or_ctx, Trace):
        ctx = EvalContext(trace_or_ctx)
    else:
        ctx = EvalContext(Trace.from_signals(trace_or_ctx))
    for key, value in fields.items():
        setattr(ctx, key, value)
    return ctx
