"""The assertion registry: ``type`` string → check function.

A check is a small pure function ``(assertion, ctx) -> Outcome`` registered with
``@assertion("signal.count")``. Adding a type means one function here or in a
family module, plus its ``$defs`` entry in ``schemas/assertions.schema.json``.
An unknown ``type`` raises :class:`UnknownAssertionType` — never a silent pass.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from signal_eval_cli.errors import InvalidAssertion, UnknownAssertionType
from signal_eval_cli.regex_budget import RegexTimeout
from signal_eval_cli.signals import Signal, Trace

__all__ = [
    "AssertionResult",
    "EvalContext",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "Outcome",
    "assertion",
    "capped",
    "evaluate_assertion",
    "evaluate_assertions",
    "known_types",
]

Assertion = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a check decides; :func:`evaluate_assertion` adds the assertion and timing."""

    passed: bool
    message: str
    expected: Any = None
    actual: Any = None
    trajectory: list[str] | None = None
    children: list[AssertionResult] | None = None
    errored: bool = False
    """The check could not be evaluated (no judge, no workspace, invalid assertion):
    a failure that composition must never turn into a pass."""


VALUE_LIMIT = 10_000
"""Characters of an ``expected``/``actual`` string kept in results (a model's 50 MB output
is in the trace already; the result says what was compared, not all of it)."""


def capped(value: Any, limit: int = VALUE_LIMIT) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}… ({len(value) - limit:,} more characters)"
    return value


@dataclass(slots=True)
class AssertionResult:
    assertion: dict[str, Any]
    passed: bool
    message: str
    expected: Any = None
    actual: Any = None
    trajectory: list[str] | None = None
    evaluation_ms: float = 0.0
    children: list[AssertionResult] | None = None
    errored: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "assertion": self.assertion,
            "passed": self.passed,
            "message": self.message,
        }
        if self.expected is not None:
            out["expected"] = capped(self.expected)
        if self.actual is not None:
            out["actual"] = capped(self.actual)
        if self.trajectory is not None:
            out["trajectory"] = self.trajectory
        out["evaluationMs"] = round(self.evaluation_ms, 4)
        if self.children is not None:
            out["children"] = [child.to_dict() for child in self.children]
        if self.errored:
            out["errored"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AssertionResult:
        # Runs for every assertion of every loaded case: positional arguments in field
        # order (keyword arguments cost more than twice as much).
        get = data.get
        children = get("children")
        return cls(
            dict(get("assertion") or ()),
            bool(get("passed")),
            str(get("message", "")),
            get("expected"),
            get("actual"),
            get("trajectory"),
            float(get("evaluationMs", 0.0)),
            None if children is None else [cls.from_dict(c) for c in children],
            bool(get("errored", False)),
        )


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What an LLM judge is asked: the output (and maybe the trace) against criteria."""

    criteria: list[str]
    output: str
    rubric: str | None = None
    model: str | None = None
    temperature: float = 0.0
    trajectory: str | None = None
    run: int = 0
    """Which of a repeated case's runs is judged: repeats are judged independently."""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    scores: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0


class Judge(Protocol):
    """Scores an output against criteria. Raise to fail the assertion with that error."""

    def judge(self, request: JudgeRequest) -> JudgeVerdict: ...


@dataclass(slots=True)
class EvalContext:
    """Everything a check may read. Only ``trace`` is always there."""

    trace: Trace
    judge: Judge | None = None
    judge_model: str | None = None
    workspace: Path | None = None
    root: Path | None = None
    baselines: dict[tuple[str, str], str | None] = field(default_factory=dict)
    run: int = 0
    """With repeats: which run of the case (0-based) this trace is."""


Check = Callable[[Assertion, EvalContext], Outcome]

_REGISTRY: dict[str, Check] = {}


def assertion(type_name: str) -> Callable[[Check], Check]:
    """Register ``check`` as the evaluator of assertions with ``type: type_name``."""

    def register(check: Check) -> Check:
        if type_name in _REGISTRY:
            raise ValueError(f"assertion type {type_name!r} is registered twice")
        _REGISTRY[type_name] = check
        return check

    return register


def known_types() -> list[str]:
    _load_families()
    return sorted(_REGISTRY)


def lookup(type_name: object) -> Check:
    _load_families()
    check = _REGISTRY.get(type_name) if isinstance(type_name, str) else None
    if check is None:
        raise UnknownAssertionType(type_name, sorted(_REGISTRY))
    return check


_FAMILIES_LOCK = threading.Lock()
_families_loaded = False


def _load_families() -> None:
    """Import the family modules once; each registers its types on import.

    Threads (a judged run evaluates on several) must never see a half-filled registry:
    the flag is set only after the import completed, under a lock (a non-empty registry
    proves nothing: the first family module registers before the last is imported)."""
    global _families_loaded
    if _families_loaded:
        return
    with _FAMILIES_LOCK:
        if not _families_loaded:
            from signal_eval_cli.assertions import families  # noqa: F401

            _families_loaded = True


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

    Raises :class:`UnknownAssertionType` for a ``type`` nobody registered and
    :class:`InvalidAssertion` for a malformed one (datasets are checked when loaded).
    """
    data = as_mapping(assertion)
    check = lookup(data.get("type"))
    ctx = _context(trace_or_ctx, context)
    started = time.perf_counter()
    try:
        outcome = check(data, ctx)
    except (UnknownAssertionType, InvalidAssertion):
        raise
    except RegexTimeout as exc:  # a user's regex over its budget fails its assertion, any type
        elapsed = (time.perf_counter() - started) * 1000
        return AssertionResult(data, False, str(exc), evaluation_ms=elapsed, errored=True)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise InvalidAssertion(f"invalid {data.get('type')} assertion: {_describe(exc)}") from None
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
    ctx = _context(trace_or_ctx, context)
    return [evaluate_assertion(a, ctx) for a in assertions]


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
