"""The HTML report in a real headless Chromium: what a reviewer sees and clicks.

Each view is opened from ``file://``; every test also checks that the page logged no
error and requested nothing but itself. Screenshots land in ``test-artifacts/html``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from browser import (
    browser,  # noqa: F401  (fixture)
    open_report,  # noqa: F401  (fixture)
)
from html_helpers import agent_signals, case, dataset

from signal_eval_cli import evaluate_assertion
from signal_eval_cli.compare import compare
from signal_eval_cli.persistence import load_result
from signal_eval_cli.reports.html import write_html_report
from signal_eval_cli.results import CaseMetrics, CaseResult
from signal_eval_cli.signals import Signal, Trace

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example run, the matrix example and a comparison with a regression, via the CLI."""
    out = tmp_path_factory.mktemp("reports")
    p = {name: out / name for name in ("run.json", "run.html", "matrix.json", "matrix.html",
                                       "cand.json", "compare.html")}  # fmt: skip
    done = cli("run", "datasets/code-review.yaml", "-q", "--signals", "all",
               "-o", p["run.json"], "--html", p["run.html"])  # fmt: skip
    assert done.returncode == 1, done.stderr
    done = cli("matrix", "datasets/matrix-code-review.yaml", "-q",
               "-o", p["matrix.json"], "--html", p["matrix.html"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = cli("run", "datasets/code-review.yaml", "-q", "--signals", "all", "-o", p["cand.json"],
               "-p", "agents=agents/code-review-concise.yaml",
               "-p", "cassette=cassettes/code-review-concise.yaml")  # fmt: skip
    assert done.returncode == 1, done.stderr
    done = cli("compare", p["run.json"], p["cand.json"], "--signals", "all",
               "--html", p["compare.html"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    return p


def card(page: Any, key: str) -> str:
    return str(page.inner_text(f'.card[data-k="{key}"] .value'))


def test_run_summary_matches_the_result(reports: dict[str, Path], open_report: Any) -> None:  # noqa: F811
    result = load_result(reports["run.json"])
    opened = open_report(reports["run.html"])
    page = opened.page
    passed = sum(c.passed and not c.skipped for c in result.cases)
    ran = sum(not c.skipped for c in result.cases)
    assert card(page, "pass-rate") == f"{passed / ran:.1%}"
    agg = result.aggregate_metrics
    assert card(page, "p50") == f"{agg.p50_latency_ms:,.0f} ms"
    assert card(page, "p95") == f"{agg.p95_latency_ms:,.0f} ms"
    assert card(page, "cost") == f"${agg.total_cost:.4f}"
    assert card(page, "tokens") == f"{agg.total_tokens:,}"
    assert card(page, "failed") == str(ran - passed)
    assert page.inner_text("#case-count") == f"{len(result.cases)} of {len(result.cases)} cases"
    opened.finish("run-summary")


def test_clicking_a_failed_case_shows_its_timeline_and_failed_assertion(
    reports: dict[str, Path],
    open_report: Any,  # noqa: F811
) -> None:
    result = load_result(reports["run.json"])
    failed = next(c for c in result.cases if not c.passed)
    opened = open_report(reports["run.html"])
    page = opened.page
    page.click(f'.case-row[data-case="{failed.case_id}"]')
    detail = page.wait_for_selector(f'.detail[data-case="{failed.case_id}"]')
    assert detail is not None
    failed_items = page.locator(".assertion.fail")
    assert failed_items.count() == len(failed.failed_assertions)
    assert failed.failed_assertions[0].message[:60] in failed_items.first.inner_text()
    # one swimlane per agent, marks for the signals
    lanes = page.locator(".tl-svg .lname").evaluate_all("ts => ts.map(t => t.textContent)")
    agents = {s.agent for s in failed.signals if s.agent}
    assert agents <= set(lanes)
    assert page.locator(".tl-svg .it").count() > 0
    assert page.locator(".tl-svg .it.model").count() >= 1  # the model call as a bar
    activations = page.locator(".tl-svg rect.it.activation")  # until the agent's last signal
    assert activations.count() >= 1 and float(activations.first.get_attribute("width")) > 3
    # the failed output assertion is pinned to the signal the output came from
    pinned = page.locator(".assertion.fail .pins button").first
    index = int(pinned.get_attribute("data-i"))
    assert failed.signals[index].name == "text:complete"
    pinned.click()
    assert page.inner_text(".insp-title") == f"#{index} text:complete"
    assert page.locator(f'.tl-svg .it.sel[data-i="{index}"]').count() == 1
    assert page.evaluate("location.hash") == f"#case={failed.case_id}"
    linked = open_report(reports["run.html"], fragment=f"#case={failed.case_id}")
    linked.page.wait_for_selector(f'.detail[data-case="{failed.case_id}"]')
    linked.check_clean()
    opened.finish("run-case")


def test_filters_change_the_rows(reports: dict[str, Path], open_report: Any) -> None:  # noqa: F811
    result = load_result(reports["run.json"])
    opened = open_report(reports["run.html"])
    page = opened.page
    n = len(result.cases)
    page.click('button[data-status="failed"]')
    failed = [c.case_id for c in result.cases if not c.passed and not c.skipped]
    assert page.locator(".case-row").evaluate_all("rs => rs.map(r => r.dataset.case)") == failed
    assert page.inner_text("#case-count") == f"{len(failed)} of {n} cases"
    page.click('button[data-status="passed"]')
    assert page.locator(".case-row").count() == n - len(failed)
    page.click('button[data-status="all"]')
    page.select_option('select[aria-label="tag"]', "security")
    security = [c.case_id for c in result.cases if "security" in c.tags]
    assert page.locator(".case-row").evaluate_all("rs => rs.map(r => r.dataset.case)") == security
    page.select_option('select[aria-label="tag"]', "")
    page.fill('input[aria-label="search"]', "injection")
    rows = page.locator(".case-row").evaluate_all("rs => rs.map(r => r.dataset.case)")
    assert rows == [c.case_id for c in result.cases if "injection" in c.case_id]
    opened.check_clean()


def test_summary_reads_without_javascript(reports: dict[str, Path], open_report: Any) -> None:  # noqa: F811
    opened = open_report(reports["run.html"], javascript=False)
    assert card(opened.page, "pass-rate") == "90.9%"
    assert opened.page.locator(".case-row").count() == 0
    opened.screenshot("run-no-js")


STATE_SIGNALS = [
    Signal("harness:start", {"state": {"a": {"b": [1, 2]}, "keep": True}}, "0"),
    Signal("state:a.b[1]:changed", {"path": "a.b[1]", "newValue": 20}, "1", agent="x"),
    Signal("state:a.b.2:changed", {"path": "a.b.2", "newValue": 3}, "2", agent="x"),  # append
    Signal("state:batch:changed", {"newValue": [{"path": "n", "newValue": {"deep": [1]}}, {"path": 'm["x.y"]', "newValue": 1}]}, "3"),
    Signal("state:keep:changed", {"oldValue": True}, "4"),  # no newValue: None
    Signal("state:a.b[-1]:changed", {"path": "a.b[-1]", "newValue": "last"}, "5"),
    Signal("state:changed", {"key": "k", "newValue": [0]}, "6"),
    Signal("state:plain:changed", 7, "7"),
    Signal("note", {}, "8"),
]  # fmt: skip


def test_state_inspector_matches_the_engine(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    report = tmp_path / "state.html"
    write_html_report(dataset([case("s", False, signals=STATE_SIGNALS)]), report)
    opened = open_report(report)
    page = opened.page
    signals = [s.to_dict() for s in STATE_SIGNALS]
    trace = Trace(STATE_SIGNALS)
    for i in range(len(STATE_SIGNALS)):
        assert page.evaluate("([s, i]) => SE.stateAfter(s, i)", [signals, i]) == trace.state_after(
            i
        )
    page.click(".case-row")
    page.locator(".srow", has_text="#1 ").click()
    assert page.inner_text(".state-diff") == "~ a.b[1]: 2 → 20"
    assert json.loads(page.inner_text(".state-after")) == trace.state_after(1)
    page.locator(".srow", has_text="#3 ").click()
    # quotes are part of a key (README "Engine rules"): m["x.y"] writes m -> '"x' -> 'y"'
    assert page.inner_text(".state-diff").splitlines() == ["+ n.deep[0]: 1", '+ m."x.y": 1']
    opened.check_clean()


def test_a_replays_timestamps_give_a_sequence_axis(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    """A cassette replay stamps 18 s of run within 1 ms: marks go in order, not on top of
    each other; a run whose timestamps span its duration keeps the time axis."""

    def signals(span_ms: float) -> list[dict[str, Any]]:
        names = [
            "harness:start",
            "agent:activated",
            "provider:start",
            "provider:end",
            "harness:end",
        ]
        out = []
        for i, name in enumerate(names):
            payload: dict[str, Any] = {"agent": "a"} if name == "agent:activated" else {}
            if name == "harness:end":
                payload = {"durationMs": 18_000}
            stamp = 1_700_000_000_000 + span_ms * i / (len(names) - 1)
            out.append({"id": str(i), "name": name, "payload": payload, "timestamp": stamp})
        return out

    report = tmp_path / "axis.html"
    write_html_report(dataset([case("a", False)]), report)
    page = open_report(report).page
    replayed = page.evaluate("s => SE.timelineModel(s)", signals(1))
    assert replayed["timeAxis"] is False and replayed["pos"] == [0, 1, 2, 3, 4]
    live = page.evaluate("s => SE.timelineModel(s)", signals(18_000))
    assert live["timeAxis"] is True and live["pos"][-1] == 18_000


def test_tool_and_snapshot_failures_are_pinned_to_their_signals(
    tmp_path: Path,
    open_report: Any,  # noqa: F811
) -> None:
    signals = [
        {"name": "harness:start", "payload": {"state": {}}},
        {"name": "tool:call", "payload": {"id": "1", "name": "Grep", "input": {}}},
        {"name": "state:tests.passed:changed", "payload": {"newValue": False}},
        {"name": "tool:call", "payload": {"id": "2", "name": "Edit", "input": {}}},
        {"name": "state:notes:changed", "payload": {"newValue": "x"}},
        {"name": "tool:call", "payload": {"id": "3", "name": "Bash", "input": {}}},
    ]
    report = tmp_path / "pins.html"
    write_html_report(dataset([case("a", False)]), report)
    page = open_report(report).page

    def pinned(assertion: dict[str, Any]) -> list[int]:
        result = {"assertion": assertion, "passed": False, "message": "failed"}
        found = page.evaluate("([r, s]) => SE.pins(r, s).indices", [result, signals])
        return list(found)

    assert pinned({"type": "tool.called", "name": "Edit", "min": 3}) == [3]
    assert pinned({"type": "tool.sequence", "tools": ["Bash", "Grep"]}) == [1, 5]
    assert pinned({"type": "snapshot.final", "path": "tests.passed", "value": True}) == [2]
    assert pinned({"type": "snapshot.final", "path": "tests", "value": {}}) == [2]


def test_a_timeline_of_10000_signals_stays_usable(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    report = tmp_path / "big.html"
    write_html_report(dataset([case("big", False, signals=agent_signals(10_000))]), report)
    opened = open_report(report)
    page = opened.page
    started = time.perf_counter()
    page.click(".case-row")
    page.wait_for_selector(".tl-svg .lname")
    opened_in = time.perf_counter() - started
    assert opened_in < 10, opened_in  # generous: a loaded CI machine; about 0.2 s idle
    assert page.locator(".tl-svg .density").count() > 0  # too dense: a density strip
    assert page.locator(".srow").count() < 100  # the signal list renders only what shows
    for _ in range(6):
        page.click('button[data-act="zoom-in"]')
    marks = page.locator(".tl-svg .it").count()
    assert 0 < marks < 3000  # zoomed in: single signals again
    tool = page.locator(".tl-svg rect.it.tool").first.evaluate("n => n.textContent")
    assert 'grep({"q":' in tool and "→ [" in tool  # a tool call with arguments and result
    page.locator(".siglist").evaluate("box => { box.scrollTop = 20 * 9000; }")
    page.wait_for_selector('.srow[data-i="9000"]')
    page.click('.srow[data-i="9000"]')
    assert page.inner_text(".insp-title").startswith("#9000 ")
    opened.finish("run-10000-signals")


def test_matrix_view(reports: dict[str, Path], open_report: Any) -> None:  # noqa: F811
    result = load_result(reports["matrix.json"])
    opened = open_report(reports["matrix.html"])
    page = opened.page
    points = page.locator("#pareto-chart circle.point[data-variant]")
    assert sorted(points.evaluate_all("ps => ps.map(p => p.dataset.variant)")) == sorted(
        v.variant_id for v in result.variants
    )
    frontier = page.locator("#pareto-chart circle.point.frontier[data-variant]")
    assert sorted(frontier.evaluate_all("ps => ps.map(p => p.dataset.variant)")) == sorted(
        result.comparison.pareto_frontier
    )
    assert page.locator("#pareto-chart #frontier").count() == 1
    assert result.recommendation is not None
    assert result.recommendation.reason in page.inner_text("#recommendation")
    assert page.locator("#grid tr").count() == 1 + len(result.variants[0].result.cases)
    page.click("#grid td.fail")
    page.wait_for_selector("#case-detail .detail .assertion.fail")
    opened.finish("matrix")


def test_comparison_view(reports: dict[str, Path], open_report: Any) -> None:  # noqa: F811
    opened = open_report(reports["compare.html"])
    page = opened.page
    sections = page.locator("main > section").evaluate_all("s => s.map(x => x.id)")
    assert sections[0] == "flips"
    flips = page.locator("#flips tr.flip").evaluate_all("rs => rs.map(r => r.dataset.case)")
    assert flips == ["path-traversal", "magic-numbers"]
    assert "pass → fail" in page.inner_text("#flips")
    assert "-18.2 pts" in page.inner_text("#deltas")
    page.click('#flips tr[data-case="path-traversal"]')
    page.wait_for_selector("#side-by-side .side-candidate .tl-svg")
    assert page.locator("#side-by-side .side-baseline .tl-svg").count() == 1
    assert page.locator("#side-by-side .side-candidate .assertion.fail").count() >= 1
    assert page.locator("#side-by-side .side-baseline .assertion.fail").count() == 0
    # drawn at the column's width (text not squashed), and the page does not overflow
    scale = page.locator("#side-by-side .tl-svg").evaluate_all(
        "ss => ss.map(s => s.viewBox.baseVal.width / s.getBoundingClientRect().width)"
    )
    assert scale == pytest.approx([1, 1], abs=0.02)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1300
    opened.finish("compare")


def test_scenario_view_with_goals_and_diff(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    report = tmp_path / "scenario.html"
    done = cli("scenario", "python-smoke", "--html", report)
    assert done.returncode == 0, done.stderr
    opened = open_report(report)
    page = opened.page
    page.click('details.scenario[data-case="python-smoke"] summary')
    goals = page.locator(".goals tr.goal").all_inner_texts()
    assert any("test" in g and "passed" in g and "2 passed" in g for g in goals)
    highlighted = page.locator(".diff-actual .expected").all_inner_texts()
    assert '+    return f"Hello, {name.strip()}!"' in highlighted
    assert page.locator(".diff-expected .missing").count() == 0
    opened.finish("scenario")


TRAJECTORY = {
    "type": "signal.trajectory",
    "patterns": [
        "harness:start",
        {"pattern": "tool:call", "payload": {"arguments": {"q": 3}}},  # not the first tool call
        "agent:completed",
        "deploy:done",
    ],
}


def test_a_failed_trajectory_is_pinned_to_its_matched_steps_and_the_step_not_found(
    tmp_path: Path,
    open_report: Any,  # noqa: F811
) -> None:
    signals = agent_signals(60)
    verdict = evaluate_assertion(TRAJECTORY, Trace(signals))
    assert not verdict.passed
    grep_3 = next(i for i, s in enumerate(signals) if s.name == "tool:call" and s.payload["arguments"] == {"q": 3})  # fmt: skip
    completed = next(i for i, s in enumerate(signals) if i > grep_3 and s.name == "agent:completed")
    assert f"step 4 'deploy:done' not found after #{completed}" in verdict.message
    windowed = {
        **TRAJECTORY,
        "patterns": ["agent:completed", "deploy:done"],
        "after": "tool:result",
    }
    in_window = evaluate_assertion(windowed, Trace(signals))
    first_result = next(i for i, s in enumerate(signals) if s.name == "tool:result")
    cases = [
        CaseResult("traj", False, [verdict], signals, None, CaseMetrics(latency_ms=1)),
        CaseResult("window", False, [in_window], signals, None, CaseMetrics(latency_ms=1)),
    ]
    report = tmp_path / "trajectory.html"
    write_html_report(dataset(cases), report)
    opened = open_report(report)
    page = opened.page

    def pins() -> tuple[list[int], str]:
        box = page.locator(".assertion.fail .pins")
        shown = box.locator("button").evaluate_all("bs => bs.map(b => +b.dataset.i)")
        return shown, box.locator(".stopped").inner_text()

    page.click('.case-row[data-case="window"]')
    page.wait_for_selector('.detail[data-case="window"]')
    shown, stopped = pins()  # the window starts after the first tool:result
    assert shown == [first_result + 2]  # its agent:completed, not the one before
    assert stopped == f"match stopped after #{first_result + 2}; step 'deploy:done' not found"
    page.click('.case-row[data-case="traj"]')
    page.wait_for_selector('.detail[data-case="traj"]')
    shown, stopped = pins()
    assert shown == [0, grep_3, completed]  # the steps matched (the payload counted)
    assert stopped == f"match stopped after #{completed}; step 'deploy:done' not found"
    pinned = page.locator(".tl-svg .it.pin").evaluate_all("ns => ns.map(n => +n.dataset.i)")
    activation = max(i for i, s in enumerate(signals[:completed]) if s.name == "agent:activated")
    assert {grep_3, activation} <= set(pinned)  # marked on the timeline (the bar it ends)
    page.click(f'.assertion.fail .pins button[data-i="{grep_3}"]')
    assert page.inner_text(".insp-title") == f"#{grep_3} tool:call"
    opened.finish("run-trajectory")


def test_the_flaky_errored_and_tag_filters_change_the_rows(
    tmp_path: Path,
    open_report: Any,  # noqa: F811
) -> None:
    cases = [
        case("ok", True, tags=["fast"]),
        case("broke", False, tags=["fast", "security"]),
        case("wobbly", True, outcomes=[True, False, True], tags=["security"]),
        case("wobbly-fail", False, outcomes=[False, True, False]),
        case("crashed", False, error="harness raised: boom", tags=["security"]),
    ]
    report = tmp_path / "filters.html"
    write_html_report(dataset(cases), report)
    opened = open_report(report)
    page = opened.page

    def rows() -> list[str]:
        return list(page.locator(".case-row").evaluate_all("rs => rs.map(r => r.dataset.case)"))

    assert rows() == ["ok", "broke", "wobbly", "wobbly-fail", "crashed"]
    assert page.inner_text('button[data-status="flaky"]') == "flaky 2"
    page.click('button[data-status="flaky"]')
    assert rows() == ["wobbly", "wobbly-fail"]
    assert page.inner_text("#case-count") == "2 of 5 cases"
    page.click('button[data-status="errored"]')
    assert rows() == ["crashed"]
    assert page.locator('.case-row[data-case="crashed"]').get_attribute("data-status") == "errored"
    page.click('button[data-status="all"]')
    page.select_option('select[aria-label="tag"]', "security")
    assert rows() == ["broke", "wobbly", "crashed"]
    page.click('button[data-status="failed"]')  # status and tag together
    assert rows() == ["broke", "crashed"]
    page.select_option('select[aria-label="tag"]', "fast")
    assert rows() == ["broke"]
    opened.finish("run-filters")


def test_a_comparison_shows_its_new_and_removed_cases(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    base = dataset([case("kept", True), case("dropped", True), case("retired", False)])
    cand = dataset([case("kept", False), case("added", True), case("fresh", False)])
    report = tmp_path / "new-removed.html"
    write_html_report(compare(base, cand), report, sides=(base, cand))
    opened = open_report(report)
    page = opened.page
    assert page.inner_text("#new-cases h2") == "New cases (2)"
    assert page.locator("#new-cases code").all_inner_texts() == ["added", "fresh"]
    assert page.inner_text("#removed-cases h2") == "Removed cases (2)"
    assert page.locator("#removed-cases code").all_inner_texts() == ["dropped", "retired"]
    assert "2 new, 2 removed" in page.inner_text("#deltas")
    assert page.locator("#flips tr.flip").evaluate_all("rs => rs.map(r => r.dataset.case)") == [
        "kept"
    ]
    opened.finish("compare-new-removed")


def test_10000_cases_render_lazily_and_scroll_to_the_last(tmp_path: Path, open_report: Any) -> None:  # noqa: F811
    """The summary and first rows come without building 10,000 rows; scrolling reaches the
    last case, which opens with its timeline (bench/html.py times the first render). What
    is lazy is the rows: ten failed cases carry a timeline (one is opened), not all 1,000
    (test_a_timeline_of_10000_signals_stays_usable is the one with many signals)."""
    signals = agent_signals(200)
    cases = [
        case(f"case-{i:05d}", i % 10 != 3, signals=signals if i % 1000 == 993 else None,
             tags=[f"t{i % 5}"], latency=1000 + i % 700)
        for i in range(10_000)
    ]  # fmt: skip
    report = tmp_path / "10000-cases.html"
    write_html_report(dataset(cases), report)
    opened = open_report(report)
    page = opened.page
    assert card(page, "failed") == "1,000"
    assert page.inner_text('.card[data-k="pass-rate"] .note').startswith("9,000/10,000 · ")
    assert page.inner_text("#case-count") == "10,000 of 10,000 cases"
    assert 0 < page.locator(".case-row").count() < 100  # only what shows is built
    page.locator(".vtable").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    page.wait_for_selector('.case-row[data-case="case-09999"]')
    page.click('button[data-status="failed"]')
    assert page.inner_text("#case-count") == "1,000 of 10,000 cases"
    page.locator(".vtable").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    page.click('.case-row[data-case="case-09993"]')
    page.wait_for_selector('.detail[data-case="case-09993"] .tl-svg .lname')
    opened.finish("run-10000-cases")
