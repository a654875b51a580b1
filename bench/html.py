"""Time the HTML report of 10,000 cases × 200 signals against ``save_result`` of the same.

A realistic run: three assertions per case, metrics on every case, 10 % of cases failing
(``--signals failed``, the default, keeps those cases' signals: 1,000 × 200 = 200,000
signals in the file). Timed, best of RUNS: :func:`write_html_report` and
:func:`save_result` with the same policy. The file sizes for ``all``/``failed``/``none``
are printed, and, when Debian's chromium and Playwright are installed, the time from
navigation until the browser has rendered the summary and the first page of cases
(target ≤ 2 s). Last line: ``html_vs_json: <ratio>`` (target ≤ 2).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# This file is named html.py: its folder must not shadow the standard library's html.
sys.path.remove(str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.persistence import save_result
from signal_eval_cli.reports.html import write_html_report
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult, SignalsPolicy
from signal_eval_cli.signals import Signal

CASES, SIGNALS, RUNS = 10_000, 200, 3
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]  # fmt: skip


def signals_of(case: int) -> list[Signal]:
    base = 1_700_000_000.0 + case
    out = [Signal("harness:start", {"state": {"step": 0}}, f"c{case}s0", base)]
    for i in range(1, SIGNALS - 1):
        agent = f"agent-{i % 3}"
        name = ("agent:activated", "provider:start", "provider:end", "tool:call",
                "tool:result", "state:step:changed", "text:delta")[i % 7]  # fmt: skip
        payload = (
            {"key": "step", "newValue": i} if name.startswith("state") else {"n": i, "model": "m"}
        )
        out.append(Signal(name, payload, f"c{case}s{i}", base + i * 0.01, agent))
    out.append(Signal("harness:end", {"durationMs": 2000}, f"c{case}e", base + 2.0))
    return out


def make_result() -> DatasetResult:
    cases = []
    for i in range(CASES):
        passed = i % 10 != 3
        checks = [
            AssertionResult({"type": "signal.not", "pattern": "error:*"}, True, "no signal matches 'error:*'"),
            AssertionResult({"type": "output.contains", "text": "injection"}, passed,
                            "output contains 'injection'" if passed else "'injection' not found in output (120 chars): …"),
            AssertionResult({"type": "metric.latency.max", "value": 30000}, True, "latency 2000 ms is ≤ 30000 ms",
                            expected=30000, actual=2000.0),
        ]  # fmt: skip
        cases.append(
            CaseResult(
                f"case-{i:05d}",
                passed,
                checks,
                signals_of(i),
                {"step": SIGNALS},
                CaseMetrics(2000.0 + i % 700, 900, 300, 1200, 0.004, 3),
                duration_ms=2000.0,
                name=f"Case {i}",
                tags=["t" + str(i % 5)],
            )
        )
    return DatasetResult("bench", cases, started_at="2026-01-01T00:00:00Z")


def best(write: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        write()
        times.append(time.perf_counter() - started)
    return min(times)


def first_render_s(page_path: Path) -> float | None:
    """Navigation to a rendered summary and first rows, in headless Chromium (best of 3)."""
    executable = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if executable is None:
        return None
    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=FLAGS)
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            started = time.perf_counter()
            page.goto(page_path.as_uri(), wait_until="commit")
            page.wait_for_selector(".case-row", timeout=60_000)
            page.wait_for_selector('.card[data-k="pass-rate"]')
            times.append(time.perf_counter() - started)
            page.close()
        browser.close()
    return min(times)


def main() -> None:
    result = make_result()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        policy: SignalsPolicy = "failed"
        json_s = best(lambda: save_result(result, out / "r.json", signals=policy))
        html_s = best(lambda: write_html_report(result, out / "r.html", signals=policy))
        print(
            f"save_result ({policy}): {json_s:.2f} s · {(out / 'r.json').stat().st_size / 1e6:.1f} MB"
        )
        print(
            f"write_html_report ({policy}): {html_s:.2f} s · {(out / 'r.html').stat().st_size / 1e6:.1f} MB"
        )
        for other in ("none", "all"):
            path = out / f"r-{other}.html"
            write_html_report(result, path, signals=other)  # type: ignore[arg-type]
            print(f"html size --signals {other}: {path.stat().st_size / 1e6:.1f} MB")
        render = first_render_s(out / "r.html")
        if render is None:
            print("first_render_s: skipped (no chromium or playwright)")
        else:
            print(f"first_render_s ({policy}): {render:.2f} (target ≤ 2)")
        render_none = first_render_s(out / "r-none.html")
        if render_none is not None:
            print(f"first_render_s (none): {render_none:.2f}")
    print(f"html_vs_json: {html_s / json_s:.2f}")


if __name__ == "__main__":
    main()
