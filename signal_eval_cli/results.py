"""Result types of cases and datasets, their aggregates, and their JSON form.

JSON keys are camelCase as in seed 002; every file carries ``schemaVersion`` and
``kind`` so :func:`load_result` can refuse what it does not understand.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.signals import Signal, Trace, as_count

__all__ = [
    "RESULT_SCHEMA_VERSION",
    "AggregateMetrics",
    "CaseMetrics",
    "CaseResult",
    "DatasetResult",
    "SignalsPolicy",
    "percentile",
]

RESULT_SCHEMA_VERSION = 1
SignalsPolicy = Literal["all", "failed", "none"]


def real(value: Any) -> float:
    """A float field read back: ``null`` is how a non-finite number (NaN) is written,
    since JSON has no NaN."""
    return float("nan") if value is None else float(value)


@dataclass(slots=True)
class CaseMetrics:
    latency_ms: float = 0.0
    input_tokens: float = 0
    output_tokens: float = 0
    total_tokens: float = 0
    cost: float = 0.0
    activations: int = 0
    runs: int = 1
    """How many runs the figures cover: a repeated case sums its runs' cost and tokens."""

    @classmethod
    def from_trace(cls, trace: Trace, wall_ms: float, *, finished: bool = True) -> CaseMetrics:
        """Latency is the trace's (``harness:end.durationMs``, else the span of the
        signals' timestamps), else wall time. A run cut short (timed out, raised) lasted
        its wall time, however early its last signal came: the span is not used for it."""
        m = trace.metrics
        latency = m.latency_ms if finished else trace.latency_ms
        return cls(
            latency_ms=latency if latency is not None else wall_ms,
            input_tokens=m.input_tokens,
            output_tokens=m.output_tokens,
            total_tokens=m.total_tokens,
            cost=m.cost,
            activations=m.activations,
        )

    @classmethod
    def of_runs(cls, runs: list[CaseMetrics]) -> CaseMetrics:
        """A repeated case's metrics: what its runs spent together, and a typical latency
        (the median: one slow run does not make the case slow)."""
        import statistics  # here: only a repeated case needs it (3 ms of every start)

        return cls(
            latency_ms=statistics.median(m.latency_ms for m in runs),
            input_tokens=sum(m.input_tokens for m in runs),
            output_tokens=sum(m.output_tokens for m in runs),
            total_tokens=sum(m.total_tokens for m in runs),
            cost=sum(m.cost for m in runs),
            activations=sum(m.activations for m in runs),
            runs=sum(m.runs for m in runs),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "latencyMs": round(self.latency_ms, 3),
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": self.total_tokens,
            "cost": self.cost,
            "activations": self.activations,
        } | ({"runs": self.runs} if self.runs != 1 else {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseMetrics:
        get = data.get  # positional arguments, in field order
        return cls(
            real(get("latencyMs", 0.0)),
            as_count(real(get("inputTokens", 0))),  # null: a NaN count, written as null
            as_count(real(get("outputTokens", 0))),
            as_count(real(get("totalTokens", 0))),
            real(get("cost", 0.0)),
            int(get("activations", 0)),
            max(1, int(get("runs", 1))),
        )


_CASE_KEYS = frozenset(
    {
        "caseId", "name", "kind", "passed", "skipped", "durationMs", "metrics", "assertions",
        "tags", "error", "outcomes", "passAtK", "passHatK", "flaky", "finalState", "signals",
    }
)  # fmt: skip
"""The keys :meth:`CaseResult.to_dict` writes itself; any other key goes to ``extra``."""
_NO_FIELDS: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class CaseResult:
    case_id: str
    passed: bool
    assertions: list[AssertionResult] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    final_state: Any = None
    metrics: CaseMetrics = field(default_factory=CaseMetrics)
    duration_ms: float = 0.0
    name: str | None = None
    error: str | None = None
    skipped: bool = False
    tags: list[str] = field(default_factory=list)
    outcomes: list[bool] | None = None
    """With repeats: pass/fail of each of the N independent runs."""
    kind: str = "case"
    extra: dict[str, Any] = field(default_factory=dict)
    """Kind-specific fields (a scenario's goals, ...) kept verbatim in JSON."""

    @property
    def failed_assertions(self) -> list[AssertionResult]:
        return [a for a in self.assertions if not a.passed]

    @property
    def latency_measured(self) -> bool:
        """False for a case that ran and ended before anything was measured (never
        started: fail-fast, an interrupt, a stuck loop): reports show "—" for its
        latency, not "0 ms", and leave it out of the latency figures. Decided from what a
        saved result keeps (the latency as written, to 3 places; not the signals, which
        ``--signals`` may drop), so a loaded result's figures equal the run's."""
        return self.skipped or not (self.error and not round(self.metrics.latency_ms, 3))

    @property
    def pass_count(self) -> int:
        return sum(self.outcomes) if self.outcomes is not None else int(self.passed)

    @property
    def run_count(self) -> int:
        return len(self.outcomes) if self.outcomes is not None else (0 if self.skipped else 1)

    @property
    def flaky(self) -> bool:
        return self.outcomes is not None and 0 < sum(self.outcomes) < len(self.outcomes)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        keep = signals == "all" or (signals == "failed" and not self.passed and not self.skipped)
        out: dict[str, Any] = {"caseId": self.case_id}
        if self.name is not None:
            out["name"] = self.name
        out |= {
            "kind": self.kind,
            "passed": self.passed,
            "skipped": self.skipped,
            "durationMs": round(self.duration_ms, 3),
            "metrics": self.metrics.to_dict(),
            "assertions": [a.to_dict() for a in self.assertions],
        }
        if self.tags:
            out["tags"] = self.tags
        if self.error is not None:
            out["error"] = self.error
        if self.outcomes is not None:
            n, k = len(self.outcomes), sum(self.outcomes)
            out |= {
                "outcomes": self.outcomes,
                "passAtK": k > 0,
                "passHatK": k == n,
                "flaky": self.flaky,
            }
        if keep:
            out["finalState"] = self.final_state
            out["signals"] = [s.to_dict() for s in self.signals]
        out |= self.extra
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], signals: list[Signal] | None = None) -> CaseResult:
        """``signals``: the case's signals, when the caller has them as ``data["signals"]``
        reads back (a run's own, just recorded: see :attr:`JournalPlan.signals`)."""
        # Runs once per case of a loaded file: one lookup per key, and positional
        # arguments (in field order: keyword arguments cost more than twice as much).
        get = data.get
        outcomes = get("outcomes")
        return cls(
            str(data["caseId"]),
            bool(data["passed"]),
            [_assertion_from_dict(a) for a in get("assertions", ())],
            [Signal.from_dict(s) for s in get("signals", ())] if signals is None else signals,
            get("finalState"),
            CaseMetrics.from_dict(get("metrics", _NO_FIELDS)),
            real(get("durationMs", 0.0)),
            get("name"),
            get("error"),
            bool(get("skipped", False)),
            list(get("tags", ())),
            None if outcomes is None else list(outcomes),
            str(get("kind", "case")),
            {}
            if data.keys() <= _CASE_KEYS
            else {k: v for k, v in data.items() if k not in _CASE_KEYS},
        )


_assertion_from_dict = AssertionResult.from_dict  # looked up once, not per assertion


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile (``sorted[ceil(p/100·n) − 1]``); 0 for no values."""
    if not sorted_values:
        return 0.0
    rank = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[rank]


@dataclass(slots=True)
class AggregateMetrics:
    avg_latency_ms: float = 0.0
    min_latency_ms: float = 0.0
    max_latency_ms: float = 0.0
    p50_latency_ms: float = 0.0
    p95_latency_ms: float = 0.0
    p99_latency_ms: float = 0.0
    total_cost: float = 0.0
    avg_cost_per_case: float = 0.0
    total_tokens: float = 0
    avg_tokens_per_case: float = 0.0
    total_activations: int = 0

    @classmethod
    def of(cls, cases: Iterable[CaseResult]) -> AggregateMetrics:
        """Over the cases that ran (skipped ones excluded, errored ones included; the
        latencies over those with a measured one)."""
        ran = [c for c in cases if not c.skipped]
        if not ran:
            return cls()
        # + 0.0 turns -0.0 into 0.0: -0.0 == 0.0, so which one a sort puts last (the max,
        # the p95) would depend on the cases' order, and JSON writes the sign
        latencies = sorted(c.metrics.latency_ms + 0.0 for c in ran if c.latency_measured) or [0.0]
        cost = sum(c.metrics.cost for c in ran)
        tokens = sum(c.metrics.total_tokens for c in ran)
        return cls(
            avg_latency_ms=sum(latencies) / len(latencies),
            min_latency_ms=latencies[0],
            max_latency_ms=latencies[-1],
            p50_latency_ms=percentile(latencies, 50),
            p95_latency_ms=percentile(latencies, 95),
            p99_latency_ms=percentile(latencies, 99),
            total_cost=cost,
            avg_cost_per_case=cost / len(ran),
            total_tokens=tokens,
            avg_tokens_per_case=tokens / len(ran),
            total_activations=sum(c.metrics.activations for c in ran),
        )

    def to_dict(self) -> dict[str, Any]:
        return {camel_case(k): round(v, 6) if isinstance(v, float) else v for k, v in _fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AggregateMetrics:
        return cls(**{k: type(v)(data.get(camel_case(k), v)) for k, v in _fields(cls())})


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(name, getattr(obj, name)) for name in obj.__slots__]


def camel_case(name: str) -> str:
    """``avg_latency_ms`` → ``avgLatencyMs``: Python field names to the JSON keys of seed 002."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


@dataclass(slots=True, repr=False)
class DatasetResult:
    name: str
    cases: list[CaseResult]
    duration_ms: float = 0.0
    started_at: str = ""
    completed_at: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    shard: dict[str, Any] | None = None
    """A shard's place in the whole run (``index``, ``count``, ``fingerprint``,
    ``order``): what ``signal-eval merge`` checks; absent from unsharded results."""

    kind: ClassVar[str] = "dataset"

    def __repr__(self) -> str:
        # A summary, not every signal: asyncio.run() reprs the main task's result on
        # Python 3.11 when it restores the SIGINT handler, which took seconds.
        return (
            f"DatasetResult(name={self.name!r}, cases={len(self.cases)}, "
            f"passed={self.passed_cases}, failed={self.failed_cases}, "
            f"skipped={self.skipped_cases}, interrupted={self.interrupted})"
        )

    @property
    def total_cases(self) -> int:
        return len(self.cases)

    @property
    def skipped_cases(self) -> int:
        return sum(c.skipped for c in self.cases)

    @property
    def passed_cases(self) -> int:
        return sum(c.passed and not c.skipped for c in self.cases)

    @property
    def failed_cases(self) -> int:
        return sum(not c.passed and not c.skipped for c in self.cases)

    @property
    def pass_rate(self) -> float:
        ran = self.passed_cases + self.failed_cases
        return self.passed_cases / ran if ran else 0.0

    @property
    def passed(self) -> bool:
        return self.failed_cases == 0

    @property
    def aggregate_metrics(self) -> AggregateMetrics:
        return AggregateMetrics.of(self.cases)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        out = {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "totalCases": self.total_cases,
            "passedCases": self.passed_cases,
            "failedCases": self.failed_cases,
            "skippedCases": self.skipped_cases,
            "passRate": self.pass_rate,
            "aggregateMetrics": self.aggregate_metrics.to_dict(),
            "durationMs": round(self.duration_ms, 3),
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "interrupted": self.interrupted,
            "metadata": self.metadata,
        }
        if self.shard is not None:
            out["shard"] = self.shard
        out["cases"] = [c.to_dict(signals) for c in self.cases]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetResult:
        case_from_dict = CaseResult.from_dict
        return cls(
            name=str(data["name"]),
            cases=[case_from_dict(c) for c in data["cases"]],
            duration_ms=real(data.get("durationMs", 0.0)),
            started_at=str(data.get("startedAt", "")),
            completed_at=str(data.get("completedAt", "")),
            metadata=dict(data.get("metadata", {})),
            interrupted=bool(data.get("interrupted", False)),
            shard=data.get("shard"),
        )
