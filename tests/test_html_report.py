"""The HTML report as a file: self-contained, escaped, shrinkable, written by every command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from html_helpers import agent_signals, case, dataset

from signal_eval_cli import evaluate_assertion
from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.compare import compare
from signal_eval_cli.matrix import VariantPoint
from signal_eval_cli.persistence import save_result
from signal_eval_cli.reports.html import generate_html_report
from signal_eval_cli.reports.markdown import ReportOptions, generate_markdown_report
from signal_eval_cli.reports.pareto import pareto_svg
from signal_eval_cli.results import CaseMetrics, CaseResult
from signal_eval_cli.signals import Signal, Trace

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]


def cli(*args: object, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def embedded(page: str, element_id: str) -> object:
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


def test_page_loads_nothing_from_the_network() -> None:
    page = generate_html_report(dataset([case("a", True), case("b", False)]))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    # The only URL is the SVG namespace, which is a name, not a request; the CSP forbids any.
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page


def test_data_cannot_close_its_script_block() -> None:
    hostile = "</script><script>alert(1)</script><!--"
    result = dataset([case(hostile, False, message=hostile, signals=agent_signals(10))])
    page = generate_html_report(result, signals="all")
    assert page.count("</script>") == 3  # the two JSON blocks and the script
    data = embedded(page, "se-data")
    assert isinstance(data, dict) and data["cases"][0]["caseId"] == hostile


def test_signals_move_to_the_lazy_block_and_the_policy_shrinks_the_file() -> None:
    result = dataset(
        [
            case("ok", True, signals=agent_signals(300)),
            case("bad", False, signals=agent_signals(300)),
        ]
    )
    sizes = {}
    for policy in ("all", "failed", "none"):
        page = generate_html_report(result, signals=policy)  # type: ignore[arg-type]
        details = embedded(page, "se-details")
        assert isinstance(details, dict)
        kept = {"all": {"c0", "c1"}, "failed": {"c1"}, "none": set()}[policy]
        assert set(details) == kept
        data = embedded(page, "se-data")
        assert isinstance(data, dict) and all("signals" not in c for c in data["cases"])
        sizes[policy] = len(page)
    assert sizes["all"] > sizes["failed"] > sizes["none"]


def test_summary_is_server_rendered() -> None:
    cases = [case(f"c{i}", i % 4 != 0, latency=100.0 * (i + 1)) for i in range(8)]
    cases.append(case("boom", False, error="harness crashed"))
    cases.append(case("flaky", True, outcomes=[True, False, True]))
    page = generate_html_report(dataset(cases))
    summary = page[page.index('id="summary"') : page.index("</section>")]
    assert '<div class="value">70.0%</div>' in summary  # 7 of 10 passed
    assert "7/10 · 95% CI" in summary
    assert 'data-k="errored"><div class="label">errored</div><div class="value">1<' in summary
    assert 'data-k="flaky"><div class="label">flaky</div><div class="value">1<' in summary
    assert '<div class="card alert" data-k="errored">' in summary  # red: there are some
    clean = generate_html_report(dataset([case("a", True)]))
    assert '<div class="card" data-k="failed">' in clean  # none failed: not drawn in red
    assert '<div class="card" data-k="errored">' in clean and "card alert" not in clean


def test_an_interrupted_run_or_matrix_says_so_above_its_summary() -> None:
    from signal_eval_cli.matrix import MatrixResult, VariantResult

    banner = '<p class="warn" id="interrupted">⚠️ Interrupted: only the cases that finished'
    partial = dataset([case("a", True)])
    assert banner not in generate_html_report(partial)
    partial.interrupted = True
    page = generate_html_report(partial)
    assert banner in page and page.index(banner) < page.index('id="summary"')
    matrix = MatrixResult.of("m", [VariantResult("v", "V", dataset([case("a", True)]))])
    assert banner not in generate_html_report(matrix)
    matrix.interrupted = True
    assert banner in generate_html_report(matrix)


def test_pareto_has_one_point_per_variant_and_marks_the_frontier() -> None:
    points = [
        VariantPoint("best", 9, 10, 0.02, 900.0),
        VariantPoint("cheap", 7, 10, 0.001, 300.0),
        VariantPoint("dominated", 7, 10, 0.01, 500.0),
    ]
    svg = pareto_svg(points, {"best", "cheap"}, "best")
    circles = re.findall(r'<circle class="([^"]+)" data-variant="([^"]+)"', svg)
    assert sorted(v for _, v in circles) == ["best", "cheap", "dominated"]
    assert {v for c, v in circles if "frontier" in c.split()} == {"best", "cheap"}
    assert [v for c, v in circles if "recommended" in c.split()] == ["best"]
    assert 'id="frontier"' in svg
    radius = dict(re.findall(r'data-variant="([^"]+)" cx="[^"]+" cy="[^"]+" r="([^"]+)"', svg))
    assert float(radius["cheap"]) < float(radius["dominated"]) < float(radius["best"])


def test_comparison_lists_flips_first_with_p_values() -> None:
    base = dataset(
        [
            case("slower", True, latency=100.0, outcomes=[True] * 5),
            case("flipped", True, outcomes=[True] * 5),
            case("fixed", False, outcomes=[False] * 5),
        ]
    )
    cand = dataset(
        [
            case("slower", True, latency=400.0, outcomes=[True] * 5),
            case("flipped", False, outcomes=[False] * 5),
            case("fixed", True, outcomes=[True] * 5),
        ]
    )
    result = compare(base, cand)
    page = generate_html_report(result, sides=(base, cand))
    assert page.index('id="flips"') < page.index('id="deltas"') < page.index('id="changes"')
    flips = page[page.index('id="flips"') : page.index('id="deltas"')]
    assert re.findall(r'data-case="([^"]+)"', flips) == ["flipped", "fixed"]
    assert "0.0040" in flips  # Fisher's one-sided p for 5/5 → 0/5
    details = embedded(page, "se-details")
    assert isinstance(details, dict)
    assert set(details) == {
        f"{s}:{c}" for s in ("baseline", "candidate") for c in ("flipped", "fixed")
    }
    markdown = generate_markdown_report(result, ReportOptions(html_link="out/report.html"))
    assert "[report.html](<out/report.html>)" in markdown.splitlines()[2]
    # only the flipped cases first (as the page's #flips), then metrics, then other changes
    flipped = markdown[markdown.index("### Flipped (2)") : markdown.index("### Metrics")]
    assert re.findall(r"\| `(\w+)` \| (pass → fail|fail → pass) \|", flipped) == [
        ("flipped", "pass → fail"),
        ("fixed", "fail → pass"),
    ]
    assert "one-sided Fisher p = 0.00397" in flipped
    assert "`slower`" not in flipped
    assert markdown.index("### Other regressions (1)") < markdown.index("`slower`")


def test_run_html_and_markdown_link_from_the_cli(tmp_path: Path) -> None:
    html, md = tmp_path / "report.html", tmp_path / "summary.md"
    done = cli("run", "datasets/code-review.yaml", "-q", "--html", html, "--markdown", md)
    assert done.returncode == 1, done.stderr  # the example fails one case on purpose
    assert f"HTML report written to {html}" in done.stderr
    page = html.read_text(encoding="utf-8")
    data = embedded(page, "se-data")
    assert isinstance(data, dict) and len(data["cases"]) == 11
    assert f"](<{html}>)" in md.read_text(encoding="utf-8")


def test_report_command_for_saved_results(tmp_path: Path) -> None:
    result = dataset([case("a", True), case("b", False, signals=agent_signals(20))])
    saved = tmp_path / "result.json"
    save_result(result, saved, signals="all")
    out = tmp_path / "r.html"
    done = cli("report", saved, "--html", out, "--signals", "none")
    assert done.returncode == 0, done.stderr
    assert embedded(out.read_text(encoding="utf-8"), "se-details") == {}
    assert cli("report", saved, "--html", out).returncode == 0
    assert set(embedded(out.read_text(encoding="utf-8"), "se-details")) == {"c0", "c1"}  # type: ignore[arg-type]


def test_bad_html_paths_and_inputs_exit_2_without_traceback(tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    save_result(dataset([case("a", True)]), saved)
    for args in (
        ("report", saved, "--html", tmp_path),  # a directory
        ("report", saved),  # nothing to write
        ("report", tmp_path / "missing.json", "--html", tmp_path / "x.html"),
        ("report", saved, "--html", tmp_path / "x.html", "--signals", "some"),
        ("run", "datasets/code-review.yaml", "--html", tmp_path),
    ):
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_runs_from_outside_the_repo(tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    save_result(dataset([case("a", True)]), saved)
    done = cli("report", "result.json", "--html", "out/r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_scenario_diff_marks_expected_and_missing_lines() -> None:
    from signal_eval_cli.assertions import AssertionResult

    expected = "@@ ... @@\n-old line\n+new line\n+never written\n"
    actual = "@@ -1,2 +1,2 @@\n-old line\n+new line\n unrelated\n"
    scenario = case("s", False)
    scenario.kind = "scenario"
    scenario.extra = {
        "goals": [{"goal": "test", "status": "failed", "exitCode": 1, "stdout": "1 failed"}]
    }
    scenario.assertions = [
        AssertionResult(
            {"type": "diff-match", "path": "a.py", "expectedDiff": expected},
            False,
            "",
            actual=actual,
        )
    ]
    page = generate_html_report(dataset([scenario]))
    actual_html = page[page.index('class="diff-actual"') : page.index('class="diff-expected"')]
    assert re.findall(r'class="ln [^"]*expected">([^<]*)<', actual_html) == [
        "-old line",
        "+new line",
    ]
    expected_html = page[page.index('class="diff-expected"') :]
    assert re.findall(r'class="ln [^"]*missing">([^<]*)<', expected_html) == ["+never written"]
    assert '<tr class="goal failed">' in page and "1 failed" in page


def test_non_finite_numbers_do_not_break_the_page() -> None:
    broken = case("nan", False)
    broken.metrics.cost = float("nan")
    broken.assertions[0].actual = float("inf")
    data = embedded(generate_html_report(dataset([broken])), "se-data")
    assert isinstance(data, dict)
    assert data["cases"][0]["metrics"]["cost"] == "nan"
    assert data["cases"][0]["assertions"][0]["actual"] == "inf"


SIGNALS_ABCAB = [Signal(n, {"k": i}, str(i)) for i, n in enumerate(["a", "b", "c", "a", "b"])]


@pytest.mark.parametrize(
    ("spec", "pins"),
    [
        ({"patterns": ["a", "b", "z"]}, {"indices": [0, 1], "missing": "z", "stop": 1}),
        (  # a payload: the second b
            {"patterns": ["a", {"pattern": "b", "payload": {"k": 4}}, "z"]},
            {"indices": [0, 4], "missing": "z", "stop": 4},
        ),
        (  # strict: the longest contiguous run
            {"patterns": ["a", "b", "a"], "strict": True},
            {"indices": [0, 1], "missing": "a", "stop": 1},
        ),
        (  # a window: after the first c
            {"patterns": ["b", "z"], "after": "c"},
            {"indices": [4], "missing": "z", "stop": 4},
        ),
        ({"patterns": ["z"], "after": "c"}, {"indices": [], "missing": "z", "stop": 2}),
        (  # a mode: every signal a step names, no stopping point
            {"patterns": ["a", "c", "z"], "mode": "superset"},
            {"indices": [0, 2, 3], "missing": "z", "stop": None},
        ),
    ],
)
def test_a_failed_trajectory_carries_the_engines_pins(spec: dict, pins: dict) -> None:  # type: ignore[type-arg]
    spec = {"type": "signal.trajectory", **spec}
    verdict = evaluate_assertion(spec, Trace(SIGNALS_ABCAB))
    assert not verdict.passed, verdict.message
    failed = CaseResult("t", False, [verdict], SIGNALS_ABCAB, None, CaseMetrics())
    nested = AssertionResult({"type": "all"}, False, "1 failed", children=[verdict])
    page = generate_html_report(
        dataset([failed, CaseResult("n", False, [nested], SIGNALS_ABCAB, None, CaseMetrics())]),
        signals="all",
    )
    rows = embedded(page, "se-data")["cases"]  # type: ignore[index]
    assert rows[0]["assertions"][0]["pins"] == pins
    assert rows[1]["assertions"][0]["children"][0]["pins"] == pins  # inside all/any/not too
