"""The report formats, as one list: every command offers each reporter its results fit.

A reporter is a name, the command-line option it answers to, the result kinds it
writes and a ``write``. A new format is its module plus one line in :data:`REPORTERS`:
``run``, ``matrix``, ``compare``, ``scenario``, ``merge`` and ``report`` then offer its
option, and :func:`write_reports` (what they call) writes it. The package's reporters
name their module (:class:`LazyReporter`), so a command imports only the formats it
writes: ``run -o out.json`` loads no Markdown, JUnit or HTML code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.kinds import Result, kind_of
from signal_eval_cli.reports.reporter import RESULT_KINDS, LazyReporter, ReportContext, Reporter
from signal_eval_cli.results import SignalsPolicy

__all__ = [
    "REPORTERS",
    "LazyReporter",
    "ReportContext",
    "Reporter",
    "reports_per_dataset",
    "write_reports",
]

_HERE = "signal_eval_cli.reports"
REPORTERS: list[Reporter] = [
    LazyReporter(
        "json",
        ("--output", "-o"),
        "Write results JSON here (atomically).",
        RESULT_KINDS,
        appends=False,
        noun="results",
        writer=f"{_HERE}.json_report:write_report",
    ),
    LazyReporter(
        "markdown",
        ("--markdown",),
        'Append a Markdown report (e.g. "$GITHUB_STEP_SUMMARY"; empty: none).',
        RESULT_KINDS,
        appends=True,
        noun="Markdown report",
        writer=f"{_HERE}.markdown:write_report",
    ),
    LazyReporter(
        "junit",
        ("--junit",),
        "Write a JUnit XML report.",
        RESULT_KINDS,
        appends=False,
        noun="JUnit report",
        writer=f"{_HERE}.junit:write_report",
    ),
    LazyReporter(
        "html",
        ("--html",),
        "Write a self-contained offline HTML report (opens from file://).",
        RESULT_KINDS - {"matrixComparison"},
        appends=False,
        noun="HTML report",
        writer=f"{_HERE}.html:write_report",
    ),
]
"""Every report format, in the order they are written (the results JSON first)."""


def write_reports(
    result: Result,
    paths: Mapping[str, str | Path | None],
    *,
    signals: SignalsPolicy = "failed",
    sides: tuple[Any, Any] | None = None,
    on_written: Callable[[Reporter, Path], None] | None = None,
) -> None:
    """Write ``result`` in each format ``paths`` names (reporter name → file; ``None``: not
    written), e.g. ``write_reports(result, {"json": "out.json", "html": "report.html"})``.

    A name no reporter has is a ``ValueError``. A format that does not take this kind of
    result, or a file that cannot be written, is an :class:`InputError` naming the path
    (reports written before it stay). ``on_written(reporter, path)`` follows each write.
    """
    unknown = sorted(set(paths) - {r.name for r in REPORTERS})
    if unknown:
        known = ", ".join(r.name for r in REPORTERS)
        raise ValueError(f"no reporter named {', '.join(unknown)} (known: {known})")
    chosen = [(r, Path(p)) for r in REPORTERS if (p := paths.get(r.name)) is not None]
    kind = kind_of(result)
    refused = [
        Problem(str(path), 0, 0, f"{r.options[0]} does not take a {kind} result")
        for r, path in chosen
        if kind not in r.kinds
    ]
    if refused:
        raise InputError(refused)
    context = ReportContext(signals, sides, {r.name: path for r, path in chosen})
    for r, path in chosen:
        try:
            with gc_paused():  # a report is thousands of small objects, no cycles: see collector
                r.write(result, path, context)
        except OSError as exc:
            message = f"cannot write: {exc.strerror or exc}"
            raise InputError([Problem(str(path), 0, 0, message)]) from exc
        if on_written is not None:
            on_written(r, path)


def reports_per_dataset(
    datasets: Sequence[Path], paths: Mapping[str, Path | None]
) -> list[dict[str, Path | None]]:
    """Each dataset's report paths (reporter name → file) for a run of several datasets:
    ``{dataset}`` in a path becomes the dataset file's stem. With several datasets, a
    report needs it (one file each) unless its reporter appends (``--markdown``: each
    dataset appends its section); two datasets of one stem would clash
    (:class:`InputError` for either)."""
    if len(datasets) > 1:
        shared = [
            r.options[0] for r in REPORTERS
            if (path := paths.get(r.name)) is not None and not r.appends
            and "{dataset}" not in str(path)
        ]  # fmt: skip
        if shared:
            raise InputError(
                f"{', '.join(shared)}: with several datasets each writes its own file: "
                "put {dataset} in the path (e.g. results/{dataset}.json)"
            )
        stems = [d.stem for d in datasets]
        twice = sorted({s for s in stems if stems.count(s) > 1})
        if twice and any(p is not None and "{dataset}" in str(p) for p in paths.values()):
            raise InputError(f"two datasets are named {', '.join(twice)}: {{dataset}} would clash")
    return [
        {
            name: Path(str(path).replace("{dataset}", d.stem)) if path is not None else None
            for name, path in paths.items()
        }
        for d in datasets
    ]
