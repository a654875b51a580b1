"""Hand-made results for the compare, matrix and report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult


def case(
    case_id: str,
    passed: bool = True,
    *,
    latency: float = 1000.0,
    cost: float = 0.01,
    outcomes: list[bool] | None = None,
    error: str | None = None,
    skipped: bool = False,
    name: str | None = None,
    **extra: Any,
) -> CaseResult:
    """A case whose failure (if any) is one failed ``output.contains``."""
    if outcomes is not None:
        passed = all(outcomes)
    passed = passed and error is None
    checks = [AssertionResult({"type": "signal.not", "pattern": "error:*"}, True, "no error:*")]
    if not passed and error is None:
        checks.append(
            AssertionResult(
                {"type": "output.contains", "text": "injection"},
                False,
                "output does not contain 'injection'",
                expected="injection",
                actual="looks fine",
            )
        )
    return CaseResult(
        case_id=case_id,
        passed=passed,
        assertions=checks if error is None else [],
        metrics=CaseMetrics(latency_ms=latency, cost=cost, total_tokens=100, activations=2),
        duration_ms=latency,
        name=name,
        error=error,
        skipped=skipped,
        outcomes=outcomes,
        **extra,
    )


def dataset(*cases: CaseResult, name: str = "code-review") -> DatasetResult:
    return DatasetResult(
        name, list(cases), duration_ms=1234.0, started_at="2026-01-10T00:00:00.000Z"
    )


def repeated(case_id: str, passes: int, runs: int) -> CaseResult:
    return case(case_id, outcomes=[True] * passes + [False] * (runs - passes))


def saved_and_loaded(result: Any, path: Path) -> Any:
    """``result`` saved to ``path``, checked against the result schema, loaded back: the
    loaded result, whose saved form must equal the original's."""
    from signal_eval_cli.loading import schema_validator
    from signal_eval_cli.persistence import load_result, save_result

    save_result(result, path)
    errors = list(schema_validator("result").iter_errors(json.loads(path.read_text())))
    assert errors == [], errors[0].message if errors else ""
    loaded = load_result(path)
    assert type(loaded) is type(result)
    assert loaded.to_dict() == result.to_dict()
    return loaded
