"""JSON reports for dashboards: the saved result shape plus pass-rate statistics.

The output validates against ``schemas/result.schema.json`` and loads with
:func:`load_result`; it differs from :func:`save_result` only in what
:class:`ReportOptions` trims (signals, passing-assertion details) and in the
``statistics`` block (95 % Wilson intervals) it adds to every case-level result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.kinds import CaseResults, Result
from signal_eval_cli.reports.reporter import ReportContext, ReportOptions, renderer
from signal_eval_cli.results import SignalsPolicy
from signal_eval_cli.stats import pass_rate_stats

if TYPE_CHECKING:
    from signal_eval_cli.matrix_model import MatrixResult

__all__ = ["generate_json_report", "write_report"]

_REQUIRED_ASSERTION_KEYS = ("assertion", "passed", "message")


def generate_json_report(result: Result, options: ReportOptions | None = None) -> dict[str, Any]:
    """A JSON-ready dict of a dataset/scenario result, a matrix result or a comparison
    (of two results or of two matrices)."""
    return renderer(_RENDERS, result, "JSON report")(result, options or ReportOptions())


def _run(result: CaseResults, opts: ReportOptions) -> dict[str, Any]:
    data = dict(result.to_dict(_signals(opts)))
    _decorate(data, result.cases, opts)
    return data


def _matrix(result: MatrixResult, opts: ReportOptions) -> dict[str, Any]:
    data = result.to_dict(_signals(opts))
    for entry, variant in zip(data["variants"], result.variants, strict=True):
        _decorate(entry["result"], variant.result.cases, opts)
    return data


def _comparison(result: Result, opts: ReportOptions) -> dict[str, Any]:
    return result.to_dict()


def _signals(opts: ReportOptions) -> SignalsPolicy:
    return "all" if opts.include_signals else "none"


def _decorate(data: dict[str, Any], cases: list[Any], opts: ReportOptions) -> None:
    data["statistics"] = pass_rate_stats(cases).to_dict()
    if opts.include_passing_details:
        return
    for case in data["cases"]:
        if case.get("passed"):
            case["assertions"] = [
                {k: a[k] for k in _REQUIRED_ASSERTION_KEYS} for a in case.get("assertions", [])
            ]


def write_report(result: Result, path: Path, context: ReportContext) -> None:
    """``--output`` (:data:`~signal_eval_cli.reports.reporters.REPORTERS`): the results
    file itself (:func:`save_result`), what ``compare``, ``merge``, ``report`` and
    :func:`load_result` read back."""
    from signal_eval_cli.persistence import save_result

    save_result(result, path, signals=context.signals)


_RENDERS: dict[str, Callable[[Any, ReportOptions], dict[str, Any]]] = {
    "dataset": _run,
    "scenarios": _run,
    "matrix": _matrix,
    "comparison": _comparison,
    "matrixComparison": _comparison,
}
"""The JSON form of each result kind: a kind missing here has no JSON report."""
