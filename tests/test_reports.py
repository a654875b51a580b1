"""Reports of the three result kinds: Markdown, JUnit XML, JSON, console."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from results_helpers import case, dataset, repeated
from rich.console import Console

from signal_eval_cli.compare import Comparison, compare
from signal_eval_cli.loading import schema_validator
from signal_eval_cli.matrix import MatrixResult, VariantResult
from signal_eval_cli.persistence import load_result
from signal_eval_cli.reports._format import fmt_interval
from signal_eval_cli.reports.console_matrix import print_comparison, print_matrix
from signal_eval_cli.reports.json_report import generate_json_report
from signal_eval_cli.reports.junit import junit_xml, write_junit_report
from signal_eval_cli.reports.markdown import (
    ReportOptions,
    generate_markdown_report,
    write_markdown_report,
)
from signal_eval_cli.results import DatasetResult
from signal_eval_cli.signals import Signal


def mixed() -> DatasetResult:
    result = dataset(
        case("ok", name="Passes"),
        case("wrong", False, name="Misses | the bug"),
        case("boom", error="ValueError: bad\x1b[31m <tag> & \x00"),
        repeated("flaky", 2, 3),
        case("later", skipped=True),
    )
    result.cases[1].signals = [
        Signal("harness:start", {"input": 1}, "s1"),
        Signal("text:complete", {"content": "looks fine"}, "s2", agent="reviewer"),
    ]
    return result


def matrix() -> MatrixResult:
    good = dataset(*[case(f"c{i}", cost=0.05) for i in range(10)])
    return MatrixResult.of(
        "review matrix",
        [
            VariantResult("detailed", "Detailed prompt", good),
            VariantResult("mixed", "Mixed", mixed()),
        ],
    )


def comparison() -> Comparison:
    cand = dataset(case("ok", False), case("wrong"), case("boom", error="x"), case("new"))
    return compare(mixed(), cand)


# -- Markdown ------------------------------------------------------------------------------------


def test_dataset_markdown_details_failures_only() -> None:
    text = generate_markdown_report(mixed())
    assert text.startswith("## ❌ code-review\n")
    assert "**1 passed · 3 failed** — pass rate 25% (1/4), 95% CI" in text
    assert "Repeated runs: 50% of 6 runs" in text and "1 flaky" in text
    assert "### ❌ `wrong` — Misses | the bug" in text
    assert "- **error**: ValueError: bad" in text
    assert "&lt;tag&gt; &amp;" in text  # model text cannot inject HTML into the summary
    assert "### ❌ `flaky` (flaky: 2/3 runs passed)" in text
    assert "`ok`" not in text.split("<details>")[0]  # passing case not detailed
    assert "1 case skipped." in text
    assert "signals" not in text


def test_markdown_options_signals_passing_and_limit() -> None:
    text = generate_markdown_report(
        mixed(), ReportOptions(include_signals=True, include_passing_details=True)
    )
    assert "### ✅ `ok` — Passes" in text and "- ✔ `signal.not`" in text
    assert "text:complete [reviewer]" in text
    limited = generate_markdown_report(mixed(), ReportOptions(max_cases_in_detail=1))
    assert limited.count("### ❌") == 1
    assert "… 2 more cases not shown in detail." in limited


def test_matrix_markdown_marks_frontier_and_recommendation() -> None:
    text = generate_markdown_report(matrix())
    assert "**Recommendation: `detailed`** (Detailed prompt) — confidence **high**" in text
    assert "| ★ 🎯 | `detailed` Detailed prompt | 100% (10/10), 95% CI 72%–100% |" in text
    assert "| ★ | `mixed` Mixed |" in text  # cheaper, so still on the frontier
    assert "Trade-offs:\n- mixed is 80% cheaper" in text
    assert "<summary>Mixed: 3 failed</summary>" in text
    assert "Detailed prompt: 0 failed" not in text


def test_comparison_markdown_regressions_first_and_blocking() -> None:
    text = generate_markdown_report(comparison())
    # it fixed a case too, but a comparison that blocks is worse (issue 10 item 8)
    assert text.startswith("## 📉 Comparison: code-review — worse, 🚫 blocks merge")
    assert "> **Blocked:** 1 critical regression: ok" in text
    # the flipped cases come first, alone: before the metrics and any other change
    flipped = text[text.index("### Flipped (2)") : text.index("### Metrics")]
    assert "| 🔴 critical | `ok` | pass → fail |" in flipped
    assert "| 🟢 | `wrong` | fail → pass |" in flipped
    assert flipped.index("`ok`") < flipped.index("`wrong`")
    assert "Other regressions" not in text  # none here: no empty section
    assert "**New cases (1):** `new`" in text
    assert "### ❌ `ok` — what failed" in text


def test_write_markdown_report_appends(tmp_path: Path) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("# CI\n")
    write_markdown_report(mixed(), summary)
    write_markdown_report(comparison(), summary)
    text = summary.read_text()
    assert text.startswith("# CI\n\n## ❌ code-review")
    assert "\n\n## 📉 Comparison" in text


def test_unknown_result_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        generate_markdown_report(object())


# -- JUnit ---------------------------------------------------------------------------------------


def test_junit_counts_and_elements(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit_report(mixed(), path)
    root = ET.parse(path).getroot()  # parses: control characters were replaced
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5",
        "failures": "2",
        "errors": "1",
        "skipped": "1",
    }
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == ["ok", "wrong", "boom", "flaky", "later"]
    assert list(cases["ok"]) == []
    (failure,) = cases["wrong"].findall("failure")
    assert failure.get("type") == "output.contains"
    assert 'expected: "injection"' in (failure.text or "")
    error = cases["boom"].find("error")
    assert error is not None and "<tag> &" in (error.get("message") or "")
    assert cases["later"].find("skipped") is not None
    assert cases["flaky"].findtext("system-out") == "2/3 runs passed (flaky)"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["passRate"] == "0.2500" and props["flakyCases"] == "1"


def test_junit_has_one_failure_per_failed_assertion() -> None:
    result = dataset(case("two", False))
    result.cases[0].assertions.append(result.cases[0].assertions[-1])
    root = ET.fromstring(junit_xml(result))
    assert len(root.findall(".//testcase/failure")) == 2
    assert root.get("failures") == "1"  # one failed testcase


def test_junit_matrix_has_a_suite_per_variant() -> None:
    root = ET.fromstring(junit_xml(matrix()))
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names == ["review matrix / detailed", "review matrix / mixed"]
    assert root.get("tests") == "15" and root.get("failures") == "2"


def test_junit_of_a_comparison_fails_the_critical_regressions_and_the_gate() -> None:
    """``compare --junit``: CI gates on compare as on run. A case fails for each critical
    regression; an improvement passes, saying so; a case not compared is skipped; the
    merge gate is a test case of its own, failing when the comparison blocks."""
    result = comparison()
    assert result.summary.should_block
    root = ET.fromstring(junit_xml(result))
    (suite,) = root.findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert suite.get("name") == "compare: code-review"
    assert [f.get("type") for f in cases["ok"].findall("failure")] == ["pass_to_fail"]
    assert cases["wrong"].find("failure") is None
    assert "fail_to_pass" in (cases["wrong"].findtext("system-out") or "")
    assert "new" in (cases["new"].findtext("system-out") or "")
    assert cases["boom"].find("failure") is None and cases["boom"].find("system-out") is None
    removed = {*result.removed_cases, *result.skipped_cases}
    assert removed and all(cases[c].find("skipped") is not None for c in removed)
    gate = cases["(merge gate)"].find("failure")
    assert gate is not None and gate.get("message") == result.summary.block_reason
    assert len(cases) == len(suite) == int(suite.get("tests", "0"))
    assert (suite.get("failures"), root.get("failures")) == ("2", "2")
    assert suite.get("skipped") == str(len(removed))


def test_junit_of_a_matrix_comparison_has_a_suite_per_variant() -> None:
    from signal_eval_cli.compare import compare_matrices

    root = ET.fromstring(junit_xml(compare_matrices(matrix(), matrix())))
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names == ["compare: review matrix / detailed", "compare: review matrix / mixed"]
    assert root.get("failures") == "0"


def test_compare_writes_junit_and_gates(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from signal_eval_cli.cli import app
    from signal_eval_cli.persistence import save_result

    save_result(dataset(case("a"), case("b")), tmp_path / "base.json")
    save_result(dataset(case("a", False), case("b")), tmp_path / "cand.json")
    argv = ["compare", "base.json", "cand.json", "--junit", "out.xml", "--fail-on-regression"]
    done = CliRunner().invoke(
        app, [str(tmp_path / a) if ".json" in a or ".xml" in a else a for a in argv]
    )
    assert done.exit_code == 1, done.output
    failed = ET.parse(tmp_path / "out.xml").getroot().iter("failure")
    assert [f.get("type") for f in failed] == ["pass_to_fail", "blocked"]


# -- JSON ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [mixed, matrix, comparison])
def test_json_report_validates_and_loads(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = generate_json_report(make())
    errors = list(schema_validator("result").iter_errors(data))
    assert errors == [], [e.message for e in errors]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    assert type(load_result(path)) is type(make())


def test_json_report_statistics_and_trimming() -> None:
    data = generate_json_report(mixed())
    stats = data["statistics"]
    counts = [stats[k] for k in ("cases", "passedCases", "runs", "flakyCases")]
    assert counts == [4, 1, 6, 1]
    assert 0 < stats["passRateInterval"]["low"] < 0.25 < stats["passRateInterval"]["high"]
    assert "runPassRateInterval" in stats
    assert all("signals" not in c for c in data["cases"])
    assert set(data["cases"][0]["assertions"][0]) == {"assertion", "passed", "message"}
    full = generate_json_report(
        mixed(), ReportOptions(include_signals=True, include_passing_details=True)
    )
    assert "evaluationMs" in full["cases"][0]["assertions"][0]
    assert full["cases"][1]["signals"][1]["source"] == {"agent": "reviewer"}


# -- console -------------------------------------------------------------------------------------


def render(printer, result) -> str:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    printer(result, Console(file=buffer, width=100, color_system=None))
    return buffer.getvalue()


def test_console_matrix_marks_pareto_and_recommendation() -> None:
    text = render(print_matrix, matrix())
    starred = [ln.split()[1] for ln in text.splitlines() if ln.split()[:1] == ["★"]]
    assert starred == ["detailed", "mixed", "Pareto"]  # two rows, then the legend
    assert "recommendation: detailed (confidence high)" in text


def test_console_comparison_lists_regressions_first() -> None:
    text = render(print_comparison, comparison())
    assert text.index("CRITICAL") < text.index("improved") < text.index("new")
    assert "BLOCK: 1 critical regression: ok" in text


def test_per_case_metric_improvements_are_collapsed_and_counted() -> None:
    result = compare(dataset(case("a", latency=2000)), dataset(case("a", latency=1000)))
    text = generate_markdown_report(result)
    assert "No case flipped between pass and fail." in text
    assert "<summary>1 per-case metric improvement</summary>" in text
    assert "latency 2,000 ms → 1,000 ms (-50%, threshold 10%)" in text
    console = render(print_comparison, result)
    assert "1 per-case metric improvement (see --markdown)" in console
    assert "metric_improved" not in console


def test_huge_compared_values_are_capped_in_results_and_junit(tmp_path: Path) -> None:
    from signal_eval_cli.assertions import AssertionResult
    from signal_eval_cli.assertions.outcome import VALUE_LIMIT
    from signal_eval_cli.reports.junit import write_junit_report
    from signal_eval_cli.results import CaseResult, DatasetResult

    huge = "x" * (VALUE_LIMIT * 5)
    check = AssertionResult({"type": "output.contains", "text": "y"}, False, "not found", "y", huge)
    data = check.to_dict()
    assert len(data["actual"]) < VALUE_LIMIT + 100
    assert data["actual"].endswith(f"… ({VALUE_LIMIT * 4:,} more characters)")
    assert data["expected"] == "y"  # short values are untouched
    junit = tmp_path / "j.xml"
    write_junit_report(DatasetResult("d", [CaseResult("c", False, [check])]), junit)
    assert junit.stat().st_size < VALUE_LIMIT * 2


def test_comparison_markdown_mentions_removed_passing_cases() -> None:
    from signal_eval_cli import compare, generate_markdown_report
    from signal_eval_cli.results import CaseResult, DatasetResult

    base = DatasetResult("d", [CaseResult("a", True), CaseResult("b", True)])
    cand = DatasetResult("d", [CaseResult("a", True)])
    text = generate_markdown_report(compare(base, cand))
    assert "> **Note:** 1 baseline case" in text and "b" in text


@pytest.mark.parametrize(
    ("low", "high", "shown"),
    [
        (0.49, 0.94, "49%–94%"),
        (0.9382, 0.9411, "93.8%–94.1%"),
        (0.93815, 0.93849, "93.81%–93.85%"),
        (0.5, 0.5, "50%–50%"),
        (0.0, 1.0, "0%–100%"),
    ],
)
def test_intervals_show_the_decimals_it_takes_to_tell_the_ends_apart(
    low: float, high: float, shown: str
) -> None:
    assert fmt_interval(low, high) == shown


# -- interrupted runs: never shown as a clean run -------------------------------------------------


def interrupted() -> DatasetResult:
    result = dataset(case("ok"), case("also-ok"))
    result.interrupted = True
    return result


def test_markdown_of_an_interrupted_run_is_never_green() -> None:
    clean = generate_markdown_report(dataset(case("ok"), case("also-ok")))
    assert clean.startswith("## ✅ ")
    text = generate_markdown_report(interrupted())
    assert text.startswith("## ⚠️ ") and "✅" not in text.splitlines()[0]
    assert "⚠️ Interrupted: only the cases that finished are shown." in text
    partial = matrix()
    partial.interrupted = True
    assert "⚠️ Interrupted: only the cases that finished are shown." in (
        generate_markdown_report(partial)
    )


def test_junit_of_an_interrupted_run_has_an_errored_case_and_stays_valid() -> None:
    import xmlschema

    xml = junit_xml(interrupted())
    root = ET.fromstring(xml)
    assert (root.get("tests"), root.get("errors")) == ("3", "1")
    (stand_in,) = [c for c in root.iter("testcase") if c.get("name") == "(run interrupted)"]
    error = stand_in.find("error")
    assert error is not None and error.get("type") == "interrupted"
    assert "only the cases that finished" in (error.get("message") or "")
    xsd = Path(__file__).parent / "fixtures" / "junit" / "junit-10.xsd"
    assert list(xmlschema.XMLSchema(str(xsd)).iter_errors(xml)) == []
    assert ET.fromstring(junit_xml(dataset(case("ok")))).get("errors") == "0"
    empty = MatrixResult.of("m", [])
    empty.interrupted = True  # no variant finished: the stand-in still has a suite
    assert ET.fromstring(junit_xml(empty)).get("errors") == "1"
