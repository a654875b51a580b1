"""JUnit XML, the format every CI server reads (Jenkins, GitLab, GitHub test reporters).

One ``<testsuite>`` per dataset (per variant for a matrix), one ``<testcase>`` per
case, one ``<failure>`` per failed assertion, ``<error>`` when the harness raised or
timed out, ``<skipped/>`` for skipped cases. Counts follow the convention: a
testcase is counted once, as an error, a failure or skipped.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from signal_eval_cli.assertions.outcome import capped
from signal_eval_cli.files import atomic_write_text
from signal_eval_cli.kinds import CaseResults, Result
from signal_eval_cli.reports._format import assertion_label, truncate
from signal_eval_cli.reports.reporter import ReportContext, renderer
from signal_eval_cli.results import CaseResult
from signal_eval_cli.stats import pass_rate_stats

if TYPE_CHECKING:
    from signal_eval_cli.compare.matrix import MatrixComparison
    from signal_eval_cli.comparison import CaseChange, Comparison, Regression
    from signal_eval_cli.matrix_model import MatrixResult

__all__ = ["junit_xml", "write_junit_report", "write_report"]

# Characters XML 1.0 forbids even escaped (terminal escapes in model output, NULs, …).
_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MESSAGE_LIMIT = 1000


def _clean(text: object) -> str:
    return _INVALID_XML.sub("\ufffd", str(text))


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _testcase(case: CaseResult, classname: str) -> tuple[ET.Element, str]:
    """The element and what it counts as: ``passed``, ``failure``, ``error`` or ``skipped``."""
    element = ET.Element(
        "testcase",
        {
            "classname": _clean(classname),
            "name": _clean(case.case_id),
            "time": _seconds(case.duration_ms),
        },
    )
    if case.skipped:
        ET.SubElement(element, "skipped", {"message": _clean(case.error or "skipped")})
        return element, "skipped"
    outcome = "passed"
    if case.error:
        error = ET.SubElement(
            element,
            "error",
            {"message": _clean(truncate(case.error, MESSAGE_LIMIT)), "type": "error"},
        )
        error.text = _clean(case.error)
        outcome = "error"
    for a in case.failed_assertions:
        kind = assertion_label(a.assertion)
        failure = ET.SubElement(
            element,
            "failure",
            {
                "message": _clean(truncate(f"{kind}: {a.message}", MESSAGE_LIMIT)),
                "type": _clean(kind),
            },
        )
        failure.text = _clean(_failure_text(a.message, a.expected, a.actual, a.assertion))
        outcome = "error" if outcome == "error" else "failure"
    if not case.passed and outcome == "passed":  # failed without a reason recorded
        ET.SubElement(element, "failure", {"message": "failed", "type": "failed"})
        outcome = "failure"
    if case.outcomes is not None:
        out = ET.SubElement(element, "system-out")
        out.text = f"{case.pass_count}/{case.run_count} runs passed" + (
            " (flaky)" if case.flaky else ""
        )
    return element, outcome


def _failure_text(message: str, expected: Any, actual: Any, assertion: dict[str, Any]) -> str:
    lines = [message, f"assertion: {_json(assertion)}"]
    if expected is not None:
        lines.append(f"expected: {_json(expected)}")
    if actual is not None:
        lines.append(f"actual: {_json(actual)}")
    return "\n".join(lines)


def _json(value: Any) -> str:
    return json.dumps(capped(value), ensure_ascii=False, default=str)


def _suite(
    name: str, cases: Sequence[CaseResult], duration_ms: float, timestamp: str
) -> ET.Element:
    suite = ET.Element("testsuite", {"name": _clean(name)})
    counts = {"passed": 0, "failure": 0, "error": 0, "skipped": 0}
    stats = pass_rate_stats(cases)
    properties = ET.SubElement(suite, "properties")
    low, high = stats.interval
    for key, value in (
        ("passRate", f"{stats.pass_rate:.4f}"),
        ("passRateInterval95", f"{low:.4f}-{high:.4f}"),
        ("flakyCases", str(stats.flaky_cases)),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    for case in cases:
        element, outcome = _testcase(case, name)
        counts[outcome] += 1
        suite.append(element)
    suite.attrib.update(
        {
            "tests": str(len(cases)),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": _seconds(duration_ms),
        }
    )
    if timestamp:
        suite.set("timestamp", _clean(timestamp))
    return suite


def _mark_interrupted(suite: ET.Element, name: str) -> None:
    """Add an errored test case standing for the cases an interrupt kept from running, so
    a CI reading the file never shows a partial run as green."""
    message = "the run was interrupted: only the cases that finished are reported"
    case = ET.SubElement(
        suite, "testcase", {"name": "(run interrupted)", "classname": _clean(name), "time": "0.000"}
    )
    ET.SubElement(case, "error", {"message": message, "type": "interrupted"}).text = message
    for key in ("tests", "errors"):
        suite.set(key, str(int(suite.get(key, "0")) + 1))


def junit_xml(result: Result) -> str:
    """The JUnit XML document of a dataset/scenario result or a matrix result."""
    suites = renderer(_RENDERS, result, "JUnit report")(result)
    name = result.name
    if getattr(result, "interrupted", False):
        suites = suites or [_suite(name, [], 0.0, "")]
        _mark_interrupted(suites[-1], name)
    root = ET.Element("testsuites", {"name": _clean(name)})
    for key in ("tests", "failures", "errors"):  # Jenkins' junit-10.xsd has no "skipped" here
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    root.set("time", f"{sum(float(s.get('time', '0')) for s in suites):.3f}")
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit_report(result: Result, path: str | Path) -> None:
    """Write the JUnit XML atomically (a CI step never reads half a file)."""
    atomic_write_text(path, junit_xml(result))


def write_report(result: Result, path: Path, context: ReportContext) -> None:
    """``--junit`` (:data:`~signal_eval_cli.reports.reporters.REPORTERS`): one test case
    per case (per variant for a matrix); for a comparison, per compared case and the
    merge gate."""
    write_junit_report(result, path)


def _run_suites(result: CaseResults) -> list[ET.Element]:
    duration = float(getattr(result, "duration_ms", 0.0))
    started = str(getattr(result, "started_at", "") or "")
    return [_suite(result.name, result.cases, duration, started)]


def _matrix_suites(result: MatrixResult) -> list[ET.Element]:
    return [
        _suite(
            f"{result.name} / {v.variant_id}",
            v.result.cases,
            v.result.duration_ms,
            v.result.started_at,
        )
        for v in result.variants
    ]


def _comparison_suite(name: str, comparison: Comparison) -> ET.Element:
    """A comparison as CI reads a test run: a case is a failure for each critical
    regression (what gates the merge), passes otherwise (warnings, improvements and the
    changes in its output), is skipped when it was not compared (skipped on a side,
    removed); and one test case, the merge gate, fails when the comparison blocks."""
    changes: dict[str, list[CaseChange]] = {}
    for change in [*comparison.regressions, *comparison.improvements]:
        changes.setdefault(change.case_id, []).append(change)
    suite = ET.Element("testsuite", {"name": _clean(name)})
    counts = {"failure": 0, "skipped": 0}
    ids = dict.fromkeys([*changes, *comparison.unchanged, *comparison.new_cases])
    for case_id in ids:
        element = ET.SubElement(
            suite, "testcase", {"classname": _clean(name), "name": _clean(case_id), "time": "0.000"}
        )
        lines = ["new: not in the baseline"] if case_id in comparison.new_cases else []
        for change in changes.get(case_id, []):
            text = f"{change.type}: {change.description}"
            severity = getattr(change, "severity", "improvement")  # only a Regression has one
            if severity != "critical":
                lines.append(f"{text} ({severity})")
                continue
            message = _clean(truncate(text, MESSAGE_LIMIT))
            failure = ET.SubElement(element, "failure", {"message": message, "type": change.type})
            failure.text = _clean("\n".join(_regression_lines(cast("Regression", change))))
        counts["failure"] += element.find("failure") is not None
        if lines:  # after any failure, as the JUnit schema orders them
            ET.SubElement(element, "system-out").text = _clean("\n".join(lines))
    for case_id, why in [
        *((c, "skipped on a side: not compared") for c in comparison.skipped_cases),
        *((c, "removed: not in the candidate") for c in comparison.removed_cases),
    ]:
        element = ET.SubElement(
            suite, "testcase", {"classname": _clean(name), "name": _clean(case_id), "time": "0.000"}
        )
        ET.SubElement(element, "skipped", {"message": why})
        counts["skipped"] += 1
    gate = ET.SubElement(
        suite, "testcase", {"classname": _clean(name), "name": "(merge gate)", "time": "0.000"}
    )
    summary = comparison.summary
    if summary.should_block:
        reason = _clean(summary.block_reason or "the comparison blocks the merge")
        ET.SubElement(gate, "failure", {"message": reason, "type": "blocked"}).text = reason
        counts["failure"] += 1
    ET.SubElement(gate, "system-out").text = f"verdict: {summary.verdict}"
    suite.attrib.update(
        {
            "tests": str(len(suite)),
            "failures": str(counts["failure"]),
            "errors": "0",
            "skipped": str(counts["skipped"]),
            "time": "0.000",
        }
    )
    return suite


def _regression_lines(regression: Regression) -> list[str]:
    lines = [regression.description]
    if regression.error:
        lines.append(f"error: {regression.error}")
    for a in regression.failed_assertions:
        lines.append(f"{assertion_label(a.assertion)}: {a.message}")
    return lines


def _comparison_suites(result: Comparison) -> list[ET.Element]:
    return [_comparison_suite(f"compare: {result.name}", result)]


def _matrix_comparison_suites(result: MatrixComparison) -> list[ET.Element]:
    return [
        _comparison_suite(f"compare: {result.name} / {v.variant_id}", v.comparison)
        for v in result.variants
    ]


_RENDERS: dict[str, Callable[[Any], list[ET.Element]]] = {
    "dataset": _run_suites,
    "scenarios": _run_suites,
    "matrix": _matrix_suites,
    "comparison": _comparison_suites,
    "matrixComparison": _matrix_comparison_suites,
}
"""The test suites of each result kind: a kind missing here has no JUnit report."""
