"""What a check decides (:class:`Outcome`) and what a result keeps of it (:class:`AssertionResult`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["VALUE_LIMIT", "AssertionResult", "Outcome", "capped"]


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
    """``value``, or a string cut at ``limit`` characters saying how much more there was."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}… ({len(value) - limit:,} more characters)"
    return value


@dataclass(slots=True)
class AssertionResult:
    """One evaluated assertion: the assertion as written, its verdict, and its timing."""

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
