"""What a comparison of two results is: options, the changes found, and the verdict.

The model :func:`~signal_eval_cli.compare.compare` builds (its rules are in
:mod:`signal_eval_cli.compare.cases`) and a saved comparison is read back into
(``kind: comparison``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.kinds import CaseResults, kind_of
from signal_eval_cli.results import RESULT_SCHEMA_VERSION, AggregateMetrics, camel_case
from signal_eval_cli.stats import PassRateStats, pass_rate_stats

__all__ = [
    "CaseChange",
    "CompareOptions",
    "Comparison",
    "ComparisonSummary",
    "Improvement",
    "Metric",
    "Regression",
    "ResultSummary",
    "Severity",
    "Side",
    "Verdict",
]

Severity = Literal["critical", "warning"]
Verdict = Literal["better", "worse", "equivalent", "mixed"]
Metric = Literal["passRate", "latency", "cost"]


@dataclass(frozen=True, slots=True)
class CompareOptions:
    pass_rate_threshold: float = 0.05
    """Minimum pass-rate change (absolute) that makes the verdict better or worse."""
    latency_threshold: float = 0.10
    """Relative latency change beyond which a case or the average counts as changed."""
    latency_floor_ms: float = 50.0
    """A latency change of at most this many ms never counts, whatever its percentage:
    on a fast harness 1 ms → 4 ms is +300 % of timer noise."""
    cost_threshold: float = 0.10
    """Relative cost change beyond which a case or the total counts as changed."""
    critical_on_pass_to_fail: bool = True
    significance: float = 0.05
    """With repeats: the one-sided Fisher p-value at or below which a change is real."""

    def to_dict(self) -> dict[str, Any]:
        return {camel_case(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompareOptions:
        defaults = cls()
        return cls(**{k: type(v)(data.get(camel_case(k), v)) for k, v in asdict(defaults).items()})


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a change: did the case pass, and the value compared (ms, USD, rate)."""

    passed: bool
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed}
        if self.value is not None:
            out["value"] = self.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Side:
        value = data.get("value")
        return cls(bool(data["passed"]), float(value) if value is not None else None)


@dataclass(slots=True)
class CaseChange:
    """What regressions and improvements share."""

    case_id: str
    type: str
    description: str
    baseline: Side
    candidate: Side
    case_name: str | None = None
    delta: float | None = None
    metric: Metric | None = None
    p_value: float | None = None
    """With repeats: the one-sided Fisher p-value behind the decision."""

    def _common_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"caseId": self.case_id}
        if self.case_name is not None:
            out["caseName"] = self.case_name
        out |= {
            "type": self.type,
            "description": self.description,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
        }
        for key, value in (("delta", self.delta), ("metric", self.metric)):
            if value is not None:
                out[key] = value
        if self.p_value is not None:
            out["pValue"] = round(self.p_value, 6)
        return out

    @staticmethod
    def _common_kwargs(data: Mapping[str, Any]) -> dict[str, Any]:
        delta, p_value = data.get("delta"), data.get("pValue")
        return {
            "case_id": str(data["caseId"]),
            "type": str(data["type"]),
            "description": str(data.get("description", "")),
            "baseline": Side.from_dict(data["baseline"]),
            "candidate": Side.from_dict(data["candidate"]),
            "case_name": data.get("caseName"),
            "delta": float(delta) if delta is not None else None,
            "metric": data.get("metric"),
            "p_value": float(p_value) if p_value is not None else None,
        }


@dataclass(slots=True)
class Regression(CaseChange):
    """``pass_to_fail`` or ``metric_degraded``; ``critical`` ones block a merge."""

    severity: Severity = "critical"
    failed_assertions: list[AssertionResult] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self._common_dict() | {"severity": self.severity}
        if self.failed_assertions:
            out["failedAssertions"] = [a.to_dict() for a in self.failed_assertions]
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Regression:
        return cls(
            **cls._common_kwargs(data),
            severity="warning" if data.get("severity") == "warning" else "critical",
            failed_assertions=[
                AssertionResult.from_dict(a) for a in data.get("failedAssertions", [])
            ],
            error=data.get("error"),
        )


@dataclass(slots=True)
class Improvement(CaseChange):
    """``fail_to_pass`` or ``metric_improved``."""

    def to_dict(self) -> dict[str, Any]:
        return self._common_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Improvement:
        return cls(**cls._common_kwargs(data))


@dataclass(slots=True)
class ResultSummary:
    """The headline numbers of one side, kept so a saved comparison stands on its own."""

    name: str
    kind: str
    total_cases: int
    passed_cases: int
    failed_cases: int
    skipped_cases: int
    pass_rate: float
    aggregate: AggregateMetrics
    stats: PassRateStats
    started_at: str = ""

    @classmethod
    def of(cls, result: CaseResults) -> ResultSummary:
        stats = pass_rate_stats(result.cases)
        return cls(
            name=result.name,
            kind=kind_of(result),
            total_cases=len(result.cases),
            passed_cases=stats.passed_cases,
            failed_cases=stats.cases - stats.passed_cases,
            skipped_cases=len(result.cases) - stats.cases,
            pass_rate=stats.pass_rate,
            aggregate=AggregateMetrics.of(result.cases),
            stats=stats,
            started_at=str(getattr(result, "started_at", "") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "totalCases": self.total_cases,
            "passedCases": self.passed_cases,
            "failedCases": self.failed_cases,
            "skippedCases": self.skipped_cases,
            "passRate": self.pass_rate,
            "aggregateMetrics": self.aggregate.to_dict(),
            "statistics": self.stats.to_dict(),
            "startedAt": self.started_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResultSummary:
        st = data.get("statistics", {})
        stats = PassRateStats(
            cases=int(st.get("cases", 0)),
            passed_cases=int(st.get("passedCases", 0)),
            runs=int(st.get("runs", 0)),
            passed_runs=int(st.get("passedRuns", 0)),
            flaky_cases=int(st.get("flakyCases", 0)),
            repeated="runPassRate" in st,
        )
        return cls(
            name=str(data["name"]),
            kind=str(data.get("kind", "dataset")),
            total_cases=int(data["totalCases"]),
            passed_cases=int(data["passedCases"]),
            failed_cases=int(data["failedCases"]),
            skipped_cases=int(data.get("skippedCases", 0)),
            pass_rate=float(data["passRate"]),
            aggregate=AggregateMetrics.from_dict(data.get("aggregateMetrics", {})),
            stats=stats,
            started_at=str(data.get("startedAt", "")),
        )


@dataclass(slots=True)
class ComparisonSummary:
    pass_rate_delta: float
    avg_latency_delta_ms: float
    avg_latency_delta_pct: float
    cost_delta: float
    cost_delta_pct: float
    verdict: Verdict
    should_block: bool
    block_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passRateDelta": round(self.pass_rate_delta, 6),
            "avgLatencyDeltaMs": round(self.avg_latency_delta_ms, 3),
            "avgLatencyDeltaPct": round(self.avg_latency_delta_pct, 3),
            "costDelta": round(self.cost_delta, 9),
            "costDeltaPct": round(self.cost_delta_pct, 3),
            "verdict": self.verdict,
            "shouldBlock": self.should_block,
        }
        if self.block_reason is not None:
            out["blockReason"] = self.block_reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonSummary:
        verdict = data["verdict"]
        if verdict not in ("better", "worse", "equivalent", "mixed"):
            raise ValueError(f"unknown verdict {verdict!r}")
        return cls(
            pass_rate_delta=float(data["passRateDelta"]),
            avg_latency_delta_ms=float(data["avgLatencyDeltaMs"]),
            avg_latency_delta_pct=float(data["avgLatencyDeltaPct"]),
            cost_delta=float(data["costDelta"]),
            cost_delta_pct=float(data["costDeltaPct"]),
            verdict=verdict,
            should_block=bool(data["shouldBlock"]),
            block_reason=data.get("blockReason"),
        )


@dataclass(slots=True)
class Comparison:
    baseline: ResultSummary
    candidate: ResultSummary
    regressions: list[Regression]
    improvements: list[Improvement]
    unchanged: list[str]
    """Cases with the same pass/fail status (they may still carry metric changes)."""
    new_cases: list[str]
    removed_cases: list[str]
    skipped_cases: list[str]
    """Present on both sides but skipped on at least one: not compared."""
    summary: ComparisonSummary
    options: CompareOptions = field(default_factory=CompareOptions)
    removed_passing: list[str] = field(default_factory=list)
    """Removed cases that passed in the baseline (not saved: the file keeps ``removedCases``)."""
    new_failing: list[str] = field(default_factory=list)
    """New cases that failed in the candidate (not saved: the file keeps ``newCases``)."""

    kind: ClassVar[str] = "comparison"

    @property
    def notes(self) -> list[str]:
        """Things a reviewer should see that do not block the merge: passing cases the
        candidate no longer has, and new cases that fail (no baseline to regress from)."""
        notes = []
        if self.removed_passing:
            notes.append(
                _counted(self.removed_passing, "baseline case", "missing from the candidate")
                + f" ({_was(self.removed_passing)} passing in the baseline): "
                + _listed(self.removed_passing)
            )
        if self.new_failing:
            notes.append(
                _counted(self.new_failing, "new case", "failing in the candidate")
                + f" (not in the baseline, so no regression): {_listed(self.new_failing)}"
            )
        return notes

    @property
    def name(self) -> str:
        if self.baseline.name == self.candidate.name:
            return self.candidate.name
        return f"{self.baseline.name} → {self.candidate.name}"

    @property
    def critical(self) -> list[Regression]:
        return [r for r in self.regressions if r.severity == "critical"]

    def to_dict(self, signals: Any = None) -> dict[str, Any]:
        """The saved form (``signals`` is accepted for :func:`save_result` and ignored)."""
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "options": self.options.to_dict(),
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "summary": self.summary.to_dict(),
            "regressions": [r.to_dict() for r in self.regressions],
            "improvements": [i.to_dict() for i in self.improvements],
            "unchanged": self.unchanged,
            "newCases": self.new_cases,
            "removedCases": self.removed_cases,
            "skippedCases": self.skipped_cases,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            baseline=ResultSummary.from_dict(data["baseline"]),
            candidate=ResultSummary.from_dict(data["candidate"]),
            regressions=[Regression.from_dict(r) for r in data["regressions"]],
            improvements=[Improvement.from_dict(i) for i in data["improvements"]],
            unchanged=[str(c) for c in data["unchanged"]],
            new_cases=[str(c) for c in data["newCases"]],
            removed_cases=[str(c) for c in data["removedCases"]],
            skipped_cases=[str(c) for c in data.get("skippedCases", [])],
            summary=ComparisonSummary.from_dict(data["summary"]),
            options=CompareOptions.from_dict(data.get("options", {})),
        )


def _counted(ids: list[str], noun: str, what: str) -> str:
    return f"{len(ids)} {noun}{'s' if len(ids) != 1 else ''} {what}"


def _was(ids: list[str]) -> str:
    return "was" if len(ids) == 1 else "were"


def _listed(ids: list[str], most: int = 5) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")
