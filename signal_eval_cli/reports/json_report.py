"""JSON reports for dashboards: the saved result shape plus pass-rate statistics.

The output validates against ``schemas/result.schema.json`` and loads with
:func:`load_result`; it differs from :func:`save_result` only in what
:class:`ReportOptions` trims (signals, passing-assertion details) and in the
``statistics`` block (95 % Wilson intervals) it adds to every case-level result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signal_eval_cli.compare.matrix import MatrixComparison
from signal_eval_cli.comparison import Comparison
from signal_eval_cli.kinds import Result, has_cases
from signal_eval_cli.matrix_model import MatrixResult
from signal_eval_cli.reports.markdown import ReportOptions
from signal_eval_cli.reports.reporter import RESULT_KINDS, ReportContext
from signal_eval_cli.results import SignalsPolicy
from signal_eval_cli.stats import pass_rate_stats

__all__ = ["JsonReporter", "generate_json_report"]

_REQUIRED_ASSERTION_KEYS = ("assertion", "passed", "message")


def generate_json_report(result: Result, options: ReportOptions | None = None) -> dict[str, Any]:
    """A JSON-ready dict of a dataset/scenario result, a matrix result or a comparison
    (of two results or of two matrices)."""
    opts = options or ReportOptions()
    if isinstance(result, Comparison | MatrixComparison):
        return result.to_dict()
    signals: SignalsPolicy = "all" if opts.include_signals else "none"
    if isinstance(result, MatrixResult):
        data = result.to_dict(signals)
        for entry, variant in zip(data["variants"], result.variants, strict=True):
            _decorate(entry["result"], variant.result.cases, opts)
        return data
    if has_cases(result):
        data = dict(result.to_dict(signals))
        _decorate(data, result.cases, opts)
        return data
    raise TypeError(f"no JSON report for {type(result).__name__}")


def _decorate(data: dict[str, Any], cases: list[Any], opts: ReportOptions) -> None:
    data["statistics"] = pass_rate_stats(cases).to_dict()
    if opts.include_passing_details:
        return
    for case in data["cases"]:
        if case.get("passed"):
            case["assertions"] = [
                {k: a[k] for k in _REQUIRED_ASSERTION_KEYS} for a in case.get("assertions", [])
            ]


class JsonReporter:
    """``--output``: the results file itself (:func:`save_result`), what ``compare``,
    ``merge``, ``report`` and :func:`load_result` read back."""

    name = "json"
    options: tuple[str, ...] = ("--output", "-o")
    help = "Write results JSON here (atomically)."
    kinds = RESULT_KINDS
    appends = False
    noun = "results"

    def write(self, result: Result, path: Path, context: ReportContext) -> None:
        from signal_eval_cli.persistence import save_result

        save_result(result, path, signals=context.signals)
