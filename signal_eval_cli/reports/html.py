"""One self-contained, offline HTML file per result: run, matrix, comparison or scenarios.

The page embeds the result as JSON plus the inline CSS and JS of ``data/report.*``; it
fetches nothing, so it opens from ``file://`` or a CI artifact. Everything a reviewer
must read first (the summary, the Pareto chart, the flipped cases, scenario goals and
diffs) is rendered here as plain HTML and SVG, so it reads without JavaScript; the
script adds the filterable case table, the timelines and the state inspector.

Signals live in a second JSON block parsed only when a timeline opens, so a file of
10,000 cases shows its summary and first rows without parsing millions of signals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.assertions.signal import trajectory_pins
from signal_eval_cli.kinds import Result
from signal_eval_cli.matrix_ranking import VariantPoint
from signal_eval_cli.reports._format import fmt_cost, fmt_interval, fmt_ms
from signal_eval_cli.reports.pareto import pareto_svg
from signal_eval_cli.reports.reporter import ReportContext, renderer
from signal_eval_cli.results import AggregateMetrics, CaseResult, SignalsPolicy
from signal_eval_cli.signals import Signal, Trace
from signal_eval_cli.stats import PassRateStats, pass_rate_stats

if TYPE_CHECKING:
    from signal_eval_cli.comparison import Comparison
    from signal_eval_cli.matrix_model import MatrixResult

__all__ = ["generate_html_report", "write_html_report", "write_report"]

_DETAIL_KEYS = ("signals", "finalState")
"""Moved out of each case into the lazily parsed signals block."""
MAX_PINS = 200
"""Signals a failed assertion is pinned to, at most."""
FOLDED_ROWS = 10
"""A list of other changes longer than this starts folded (flipped cases never are)."""
MAX_STATIC_ROWS = 2_000
"""Rows of the server-rendered matrix grid and flip lists (the rest are counted)."""


@cache
def _asset(name: str) -> str:
    return (files("signal_eval_cli") / "data" / name).read_text(encoding="utf-8")


def _json_block(element_id: str, value: Any) -> str:
    """JSON inside ``<script type="application/json">``: ``<`` escaped so no ``</script>``
    or ``<!--`` in the data can end the block."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or ±Infinity somewhere: JSON.parse would reject the page
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c")
    return f'<script id="{element_id}" type="application/json">{text}</script>'


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as its string (``"nan"``, ``"inf"``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


@dataclass(slots=True)
class _Page:
    """What a view contributes: a title, static HTML, embedded data and detached signals."""

    title: str
    body: str
    data: dict[str, Any]
    details: dict[str, Any]


def generate_html_report(
    result: Result,
    *,
    signals: SignalsPolicy = "failed",
    sides: tuple[Any, Any] | None = None,
) -> str:
    """The HTML report of a dataset/scenario result, a matrix result or a comparison.

    ``sides`` (the baseline and candidate results) lets a comparison open the
    timelines of flipped cases side by side; without it the flips are listed only.
    """
    page = renderer(_RENDERS, result, "HTML report")(result, signals, sides)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No network at view time, even if the data held a URL: nothing may load.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(page.title)} · signal-eval</title>"
        f"<style>{_asset('report.css')}</style></head><body>"
        f'<main id="app">{page.body}</main>'
        f"{_json_block('se-data', page.data)}{_json_block('se-details', page.details)}"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def write_html_report(
    result: Result,
    path: str | Path,
    *,
    signals: SignalsPolicy = "failed",
    sides: tuple[Any, Any] | None = None,
) -> None:
    """Write the report to ``path`` atomically (a half-written page is never left behind)."""
    from signal_eval_cli.files import atomic_write_text

    atomic_write_text(Path(path), generate_html_report(result, signals=signals, sides=sides))


def write_report(result: Result, path: Path, context: ReportContext) -> None:
    """``--html`` (:data:`~signal_eval_cli.reports.reporters.REPORTERS`): this module's
    page; a comparison's shows both sides' timelines when the context holds them. Two
    matrices compared have no page (``compare --variant`` gives one variant's)."""
    write_html_report(result, path, signals=context.signals, sides=context.sides)


# -- case lists -------------------------------------------------------------------------------


def _case_rows(
    cases: Iterable[CaseResult], signals: SignalsPolicy, details: dict[str, Any], prefix: str
) -> list[dict[str, Any]]:
    """Each case's JSON form; its signals and final state go to ``details[prefix + index]``."""
    rows = []
    for index, case in enumerate(cases):
        row = case.to_dict(signals)
        if "signals" in row:
            if not case.passed:
                _pin_trajectories(row["assertions"], case.signals)
            details[f"{prefix}{index}"] = {k: row.pop(k, None) for k in _DETAIL_KEYS}
        rows.append(row)
    return rows


def _pin_trajectories(assertions: list[dict[str, Any]], signals: list[Signal]) -> None:
    """Each ``signal.trajectory`` of a failed case (also inside ``any``/``all``/``not``)
    gets ``pins``: what the engine's search matched, where it stopped, the step not
    found. (The page guesses other assertions' signals from their fields.)"""
    trace: Trace | None = None
    stack = list(assertions)
    while stack:
        item = stack.pop()
        stack += item.get("children") or []
        spec = item.get("assertion")
        if not isinstance(spec, dict) or spec.get("type") != "signal.trajectory":
            continue
        trace = trace or Trace(signals)
        try:
            pins = trajectory_pins(spec, trace)
        except (KeyError, TypeError, ValueError):  # a hand-edited result: leave it to the page
            continue
        item["pins"] = {
            "indices": pins.matched[:MAX_PINS],
            "missing": pins.missing,
            "stop": pins.stop,
        }


def _status_counts(cases: list[CaseResult]) -> dict[str, int]:
    return {
        "passed": sum(c.passed and not c.skipped for c in cases),
        "failed": sum(not c.passed and not c.skipped for c in cases),
        "flaky": sum(c.flaky for c in cases),
        "errored": sum(c.error is not None for c in cases),
        "skipped": sum(c.skipped for c in cases),
    }


def _card(key: str, label: str, value: str, note: str = "", *, alert: bool = False) -> str:
    """A summary figure; ``alert`` draws it in the failure colour (a count above zero)."""
    note_html = f'<div class="note">{escape(note)}</div>' if note else ""
    kind = "card alert" if alert else "card"
    return (
        f'<div class="{kind}" data-k="{key}"><div class="label">{escape(label)}</div>'
        f'<div class="value">{escape(value)}</div>{note_html}</div>'
    )


def _summary_cards(stats: PassRateStats, agg: AggregateMetrics, counts: Mapping[str, int]) -> str:
    low, high = stats.interval
    cards = [
        _card(
            "pass-rate",
            "pass rate",
            f"{stats.pass_rate:.1%}",
            f"{stats.passed_cases:,}/{stats.cases:,} · 95% CI {fmt_interval(low, high)}",
        ),
        _card("p50", "p50 latency", fmt_ms(agg.p50_latency_ms)),
        _card("p95", "p95 latency", fmt_ms(agg.p95_latency_ms)),
        _card("cost", "cost", fmt_cost(agg.total_cost), f"{fmt_cost(agg.avg_cost_per_case)}/case"),
        _card("tokens", "tokens", f"{agg.total_tokens:,}"),
        _card("failed", "failed", f"{counts['failed']:,}", alert=counts["failed"] > 0),
        _card("flaky", "flaky", f"{counts['flaky']:,}"),
        _card("errored", "errored", f"{counts['errored']:,}", alert=counts["errored"] > 0),
        _card("skipped", "skipped", f"{counts['skipped']:,}"),
    ]
    return f'<section class="cards" id="summary">{"".join(cards)}</section>'


def _header(kind: str, name: str, subtitle: str = "") -> str:
    sub = f'<div class="sub">{escape(subtitle)}</div>' if subtitle else ""
    return f'<header><div class="kind">{escape(kind)}</div><h1>{escape(name)}</h1>{sub}</header>'


_NO_JS = (
    '<noscript><p class="warn">The case table, timelines and state inspector need '
    "JavaScript; the summary above is complete without it.</p></noscript>"
)


def _interrupted(result: Any) -> str:
    """A partial result says so above its summary: never read as a clean run."""
    if not getattr(result, "interrupted", False):
        return ""
    return (
        '<p class="warn" id="interrupted">⚠️ Interrupted: only the cases that finished '
        "are shown.</p>"
    )


def _when(result: Any) -> str:
    started = getattr(result, "started_at", "") or ""
    duration = getattr(result, "duration_ms", 0.0) or 0.0
    return f"{started} · {duration / 1000:.2f}s" if started else ""


# -- views ------------------------------------------------------------------------------------


def _run_page(result: Any, signals: SignalsPolicy) -> _Page:
    cases: list[CaseResult] = result.cases
    details: dict[str, Any] = {}
    rows = _case_rows(cases, signals, details, "c")
    counts = _status_counts(cases)
    scenario = any(c.kind == "scenario" for c in cases)
    body = [
        _header("scenarios" if scenario else "run", result.name, _when(result)),
        _interrupted(result),
        _summary_cards(pass_rate_stats(cases), AggregateMetrics.of(cases), counts),
    ]
    if scenario:
        body.append(_scenarios_html(cases))
    body += [_NO_JS, '<section id="cases"></section>']
    data = {"view": "run", "name": result.name, "cases": rows, "signals": signals}
    return _Page(result.name, "".join(body), data, details)


def _scenarios_html(cases: list[CaseResult]) -> str:
    """Each scenario's goals with their output, and its diffs with the expected hunks marked."""
    parts = ['<section id="scenarios"><h2>Scenarios</h2>']
    for case in cases:
        mark = "pass" if case.passed else "fail"
        parts.append(
            f'<details class="scenario {mark}" data-case="{escape(case.case_id)}"'
            f"{' open' if not case.passed else ''}><summary>"
            f'<span class="badge {mark}">{mark.upper()}</span> {escape(case.case_id)}'
            f" — {escape(case.name or '')}</summary>"
        )
        goals = case.extra.get("goals") or []
        if goals:
            parts.append(
                '<table class="goals"><tr><th>goal</th><th>status</th><th>output</th></tr>'
            )
            for goal in goals:
                status = str(goal.get("status", ""))
                output = "\n".join(
                    str(goal.get(k) or "") for k in ("error", "stdout", "stderr") if goal.get(k)
                )
                parts.append(
                    f'<tr class="goal {escape(status)}"><td>{escape(str(goal.get("goal")))}</td>'
                    f'<td><span class="badge {"pass" if status == "passed" else "fail"}">'
                    f"{escape(status)}</span> exit {escape(str(goal.get('exitCode')))}</td>"
                    f"<td><pre>{escape(output[-4000:])}</pre></td></tr>"
                )
            parts.append("</table>")
        for checked in case.assertions:
            if checked.assertion.get("type") == "diff-match":
                parts.append(_diff_html(checked.assertion, checked.passed, checked.actual))
        parts.append("</details>")
    parts.append("</section>")
    return "".join(parts)


def _diff_html(assertion: Mapping[str, Any], passed: bool, actual: Any) -> str:
    """The actual diff, lines that belong to the expected hunks highlighted; then the
    expected hunks, the lines not found in the actual diff marked missing."""
    expected = str(assertion.get("expectedDiff") or "")
    wanted = {ln for ln in expected.splitlines() if ln[:1] in "+-" and ln[1:].strip()}
    actual_text = actual if isinstance(actual, str) else ""
    got = set(actual_text.splitlines())

    def lines(text: str, mark: Callable[[str], str]) -> str:
        out = []
        for line in text.splitlines():
            kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
            kind += " hunk" if line.startswith("@@") else ""
            out.append(f'<span class="ln {kind} {mark(line)}">{escape(line)}</span>')
        return "".join(out)  # each line is a block: no newline between them

    head = f"{escape(str(assertion.get('path', '')))}: {'passed' if passed else 'failed'}"
    actual_html = (
        lines(actual_text, lambda ln: "expected" if ln in wanted else "")
        if actual_text
        else "(no diff)"
    )
    expected_html = lines(expected, lambda ln: "missing" if ln in wanted and ln not in got else "")
    return (
        f'<div class="diff {"pass" if passed else "fail"}"><h4>diff {head}</h4>'
        f'<div class="cols"><div><div class="label">actual diff (expected lines marked)</div>'
        f'<pre class="diff-actual">{actual_html}</pre></div>'
        f'<div><div class="label">expected hunks</div>'
        f'<pre class="diff-expected">{expected_html}</pre></div></div></div>'
    )


def _matrix_page(result: MatrixResult, signals: SignalsPolicy) -> _Page:
    details: dict[str, Any] = {}
    points = [VariantPoint.of(v) for v in result.variants]
    frontier = set(result.comparison.pareto_frontier)
    rec = result.recommendation
    variants = []
    for vi, variant in enumerate(result.variants):
        variants.append(
            {
                "id": variant.variant_id,
                "name": variant.variant_name,
                "cases": _case_rows(variant.result.cases, signals, details, f"v{vi}:"),
            }
        )
    rows = []
    for variant, point in zip(result.variants, points, strict=True):
        stats = pass_rate_stats(variant.result.cases)
        tags = ("frontier " if point.id in frontier else "") + (
            "recommended" if rec and rec.variant_id == point.id else ""
        )
        rows.append(
            f'<tr class="{tags.strip()}" data-variant="{escape(point.id)}">'
            f"<td>{escape(variant.variant_name)}</td><td>{stats.pass_rate:.1%} "
            f"({stats.passed_cases}/{stats.cases})</td><td>{fmt_cost(point.cost)}</td>"
            f"<td>{fmt_ms(point.latency)}</td><td>{'✔' if point.id in frontier else ''}</td></tr>"
        )
    recommendation = (
        f'<section id="recommendation"><h2>Recommendation: {escape(rec.variant_id)}</h2>'
        f"<p>{escape(rec.reason)} (confidence: {escape(rec.confidence)})</p>"
        f"<ul>{''.join(f'<li>{escape(t)}</li>' for t in rec.tradeoffs)}</ul></section>"
        if rec
        else '<section id="recommendation"><p>No recommendation: '
        + ("the run was interrupted." if result.interrupted else "no variant ran.")
        + "</p></section>"
    )
    body = "".join(
        [
            _header("matrix", result.name, _when(result)),
            _interrupted(result),
            recommendation,
            '<section id="pareto"><h2>Pass rate vs cost</h2>',
            pareto_svg(points, frontier, rec.variant_id if rec else None),
            "</section>",
            '<section><h2>Variants</h2><table id="variants"><tr><th>variant</th>'
            "<th>pass rate</th><th>cost/case</th><th>p50 latency</th><th>frontier</th></tr>",
            *rows,
            "</table></section>",
            _grid_html(result),
            _NO_JS,
            '<section id="cases"></section>',
        ]
    )
    data = {"view": "matrix", "name": result.name, "variants": variants, "signals": signals}
    return _Page(result.name, body, data, details)


def _grid_html(result: MatrixResult) -> str:
    """Variants × cases: one cell per case and variant, clickable to open that case."""
    ids: list[str] = []
    seen: set[str] = set()
    for variant in result.variants:
        for case in variant.result.cases:
            if case.case_id not in seen:
                seen.add(case.case_id)
                ids.append(case.case_id)
    index = [{c.case_id: (i, c) for i, c in enumerate(v.result.cases)} for v in result.variants]
    head = "".join(f"<th>{escape(v.variant_id)}</th>" for v in result.variants)
    rows = []
    for case_id in ids[:MAX_STATIC_ROWS]:
        cells = []
        for vi, by_id in enumerate(index):
            found = by_id.get(case_id)
            if found is None:
                cells.append('<td class="cell none">–</td>')
                continue
            ci, case = found
            word = "skip" if case.skipped else "pass" if case.passed else "fail"
            cells.append(
                f'<td class="cell {word}" data-key="v{vi}:{ci}" title="{escape(word)}">'
                f"{'✔' if word == 'pass' else '✘' if word == 'fail' else '·'}</td>"
            )
        rows.append(f"<tr><td class='id'>{escape(case_id)}</td>{''.join(cells)}</tr>")
    more = f"<p>… {len(ids) - MAX_STATIC_ROWS} more cases</p>" if len(ids) > MAX_STATIC_ROWS else ""
    return (
        f'<section><h2>Variants × cases</h2><table id="grid"><tr><th>case</th>{head}</tr>'
        f"{''.join(rows)}</table>{more}</section>"
    )


def _comparison_page(
    result: Comparison, signals: SignalsPolicy, sides: tuple[Any, Any] | None
) -> _Page:
    s, base, cand = result.summary, result.baseline, result.candidate
    flips = [r for r in result.regressions if r.type == "pass_to_fail"]
    fixes = [i for i in result.improvements if i.type == "fail_to_pass"]
    others = [r for r in result.regressions if r.type != "pass_to_fail"] + [
        i for i in result.improvements if i.type != "fail_to_pass"
    ]
    details: dict[str, Any] = {}
    flipped_ids = {c.case_id for c in [*flips, *fixes]}
    if sides is not None:
        for label, side in zip(("baseline", "candidate"), sides, strict=True):
            for case in side.cases:
                if case.case_id in flipped_ids:
                    row = case.to_dict(signals)
                    row.setdefault("signals", None)
                    details[f"{label}:{case.case_id}"] = row
    gate = "blocks merge" if s.should_block else "does not block"
    metrics = [
        ("pass rate", f"{base.pass_rate:.1%}", f"{cand.pass_rate:.1%}",
         f"{s.pass_rate_delta * 100:+.1f} pts"),
        ("p50 latency", fmt_ms(base.aggregate.p50_latency_ms),
         fmt_ms(cand.aggregate.p50_latency_ms), _pct(base.aggregate.p50_latency_ms,
                                                     cand.aggregate.p50_latency_ms)),
        ("avg latency", fmt_ms(base.aggregate.avg_latency_ms),
         fmt_ms(cand.aggregate.avg_latency_ms), f"{s.avg_latency_delta_pct:+.0f}%"),
        ("total cost", fmt_cost(base.aggregate.total_cost), fmt_cost(cand.aggregate.total_cost),
         f"{s.cost_delta_pct:+.0f}%"),
        ("tokens", f"{base.aggregate.total_tokens:,}", f"{cand.aggregate.total_tokens:,}",
         _pct(base.aggregate.total_tokens, cand.aggregate.total_tokens)),
        ("cases", str(base.total_cases), str(cand.total_cases),
         f"{len(result.new_cases)} new, {len(result.removed_cases)} removed"),
    ]  # fmt: skip
    metric_rows = "".join(
        f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td>{escape(c)}</td><td>{escape(d)}</td></tr>"
        for a, b, c, d in metrics
    )
    block = f'<p class="warn">Blocked: {escape(s.block_reason)}</p>' if s.block_reason else ""
    body = "".join(
        [
            _header("comparison", result.name, f"{s.verdict} · {gate}"),
            block,
            _flip_table("flips", "Flipped cases", [*flips, *fixes], sides is not None),
            '<section><h2>Metrics</h2><table id="deltas"><tr><th></th><th>baseline</th>'
            f"<th>candidate</th><th>change</th></tr>{metric_rows}</table></section>",
            _flip_table("changes", "Other changes", others, False, fold=True),
            _id_list("new-cases", "New cases", result.new_cases),
            _id_list("removed-cases", "Removed cases", result.removed_cases),
            *(f'<p class="warn">{escape(n)}</p>' for n in result.notes),
            '<section id="side-by-side"></section>',
        ]
    )
    data = {"view": "compare", "name": result.name, "signals": signals, "sides": sides is not None}
    return _Page(result.name, body, data, details)


def _pct(base: float, cand: float) -> str:
    return f"{(cand - base) / base * 100:+.0f}%" if base else "–"


def _flip_table(
    element_id: str, title: str, changes: list[Any], openable: bool, *, fold: bool = False
) -> str:
    if not changes:
        return f'<section id="{element_id}"><h2>{escape(title)} (0)</h2><p>None.</p></section>'
    rows = []
    for c in changes[:MAX_STATIC_ROWS]:
        arrow = {"pass_to_fail": "pass → fail", "fail_to_pass": "fail → pass"}.get(
            c.type, c.type.replace("_", " ")
        )
        kind = "fail" if c.type in ("pass_to_fail", "metric_degraded") else "pass"
        p_value = f"{c.p_value:.4f}" if c.p_value is not None else "–"
        failed = "; ".join(
            f"{a.assertion.get('type')}: {a.message}" for a in getattr(c, "failed_assertions", [])
        )
        open_attr = f' data-case="{escape(c.case_id)}"' if openable else ""
        rows.append(
            f'<tr class="flip {kind}"{open_attr}><td><span class="badge {kind}">'
            f"{escape(arrow)}</span></td><td class='id'>{escape(c.case_id)}</td>"
            f"<td>{escape(c.description)}</td><td>{p_value}</td>"
            f"<td>{escape(failed[:500])}</td></tr>"
        )
    more = (
        f"<p>… {len(changes) - MAX_STATIC_ROWS} more</p>" if len(changes) > MAX_STATIC_ROWS else ""
    )
    table = (
        '<table class="flips"><tr><th></th><th>case</th><th>what changed</th>'
        f"<th>p-value</th><th>failed assertions</th></tr>{''.join(rows)}</table>{more}"
    )
    if fold and len(changes) > FOLDED_ROWS:  # e.g. a metric change in every case
        table = f"<details><summary>show all {len(changes)}</summary>{table}</details>"
    return f'<section id="{element_id}"><h2>{escape(title)} ({len(changes)})</h2>{table}</section>'


def _id_list(element_id: str, title: str, ids: list[str]) -> str:
    if not ids:
        return ""
    shown = ", ".join(f"<code>{escape(i)}</code>" for i in ids[:MAX_STATIC_ROWS])
    return (
        f'<section id="{element_id}"><h2>{escape(title)} ({len(ids)})</h2><p>{shown}</p></section>'
    )


_RENDERS: dict[str, Callable[[Any, SignalsPolicy, tuple[Any, Any] | None], _Page]] = {
    "dataset": lambda result, signals, sides: _run_page(result, signals),
    "scenarios": lambda result, signals, sides: _run_page(result, signals),
    "matrix": lambda result, signals, sides: _matrix_page(result, signals),
    "comparison": _comparison_page,
}
"""The page of each result kind (signals kept, a comparison's two sides): a kind
missing here has no HTML report."""
