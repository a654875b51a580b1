"""The ``signal-eval`` command line: a thin layer over the library.

Exit codes: 0 all passed · 1 evaluation failures or a blocking regression ·
2 invalid input (``file:line:col`` messages, no traceback) · 130 interrupted.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from rich.console import Console

from signal_eval_cli.cli_providers import (
    JudgeModelOpt,
    MaxConnectionsOpt,
    PriceOpt,
    ProviderFlags,
    ProviderOpt,
    RecordMissingOpt,
    RecordOpt,
    ReplayOpt,
)
from signal_eval_cli.dataset import EvalDataset, HarnessSpec, load_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.recorded import RecordedTraces
from signal_eval_cli.persistence import save_result
from signal_eval_cli.reports.console import print_dataset
from signal_eval_cli.results import CaseResult, DatasetResult, SignalsPolicy
from signal_eval_cli.runner import RunOptions, run_dataset, select_cases
from signal_eval_cli.signals import now_iso
from signal_eval_cli.validate import validate_path

app = typer.Typer(
    name="signal-eval",
    help="Evaluate AI agent workflows by asserting over the signals they emit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console(*, stderr: bool = False) -> Console:
    """Rich console; logs (no terminal, no COLUMNS) get 120 columns instead of 80."""
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=120)
    return console


out = _console()
err = _console(stderr=True)

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def print_problems(error: InputError) -> None:
    """One ``file:line:col: message`` per line, unwrapped, on stderr."""
    for problem in error.problems:
        typer.echo(str(problem), err=True)


def fail_input(error: InputError) -> NoReturn:
    print_problems(error)
    raise typer.Exit(EXIT_INPUT)


def parse_params(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as YAML scalars (``3`` → 3, ``true`` → True)."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail_input(InputError(f"--param expects key=value, got {item!r}"))
        try:
            params[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            params[key] = value
    return params


def build_harness(
    dataset: EvalDataset,
    harness: str | None,
    params: dict[str, Any],
    traces: Path | None,
    options: RunOptions,
) -> Any:
    if traces is not None:
        return RecordedTraces(traces, [c.id for c in select_cases(dataset, options) if not c.skip])
    spec = HarnessSpec(harness, {}) if harness else dataset.harness
    if spec is None:
        raise InputError(
            f"{dataset.path}: the dataset names no harness: add 'harness: pkg.module:factory' "
            "to it, or pass --harness, or evaluate recorded traces with --traces DIR"
        )
    base_dir = dataset.path.parent if dataset.path else None
    return resolve_harness(spec.factory, {**spec.params, **params}, base_dir=base_dir)


class Progress:
    """A progress bar on a terminal; one plain line per case otherwise."""

    def __init__(self, total: int, *, quiet: bool) -> None:
        self.total, self.done, self.quiet = total, 0, quiet
        self.results: list[CaseResult] = []
        self.bar: Any = None
        if not quiet and err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            self.task = self.bar.add_task("running", total=total)

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, result: CaseResult) -> None:
        self.results.append(result)
        self.done += 1
        if self.bar is not None:
            self.bar.advance(self.task)
        elif not self.quiet:
            status = "skip" if result.skipped else "pass" if result.passed else "FAIL"
            err.print(
                f"[{self.done}/{self.total}] {result.case_id}: {status}",
                markup=False,
                highlight=False,
            )


def write_reports(
    result: Any,
    *,
    output: Path | None,
    markdown: Path | None,
    junit: Path | None,
    signals: SignalsPolicy,
) -> None:
    if output is not None:
        save_result(result, output, signals=signals)
        err.print(f"results written to {output}", highlight=False)
    if markdown is not None:
        from signal_eval_cli.reports.markdown import write_markdown_report

        write_markdown_report(result, markdown)
    if junit is not None:
        from signal_eval_cli.reports.junit import write_junit_report

        write_junit_report(result, junit)


OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write results JSON here (atomically).")
]
MarkdownOpt = Annotated[
    Path | None, typer.Option(help='Append a Markdown report (e.g. "$GITHUB_STEP_SUMMARY").')
]
JunitOpt = Annotated[Path | None, typer.Option(help="Write a JUnit XML report.")]
SignalsOpt = Annotated[str, typer.Option(help="Signals kept in results: all, failed or none.")]


@app.command()
def run(
    dataset_path: Annotated[Path, typer.Argument(metavar="DATASET", help="Dataset YAML file.")],
    traces: Annotated[
        Path | None,
        typer.Option(
            help="Evaluate recorded traces DIR/<case-id>.jsonl instead of running a harness."
        ),
    ] = None,
    harness: Annotated[
        str | None,
        typer.Option(help="Harness factory: pkg.module:attr, file.py:attr or a registered name."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Factory parameter key=value (repeatable)."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Cases run at once.")] = 4,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="Only cases with any of these tags.")
    ] = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", "-c", help="Only these case ids.")
    ] = None,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Start no new case after the first failure.")
    ] = False,
    timeout: Annotated[
        float | None, typer.Option(help="Per-case timeout in ms when the dataset sets none.")
    ] = None,
    repeat: Annotated[
        int | None, typer.Option(min=1, help="Run each case N times; report flakiness.")
    ] = None,
    output: OutputOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    signals: SignalsOpt = "failed",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    provider: ProviderOpt = None,
    record: RecordOpt = False,
    record_missing: RecordMissingOpt = False,
    replay: ReplayOpt = False,
    max_connections: MaxConnectionsOpt = None,
    judge_model: JudgeModelOpt = None,
    price: PriceOpt = None,
) -> None:
    """Run a dataset (or evaluate recorded traces) and print a table of results."""
    if signals not in ("all", "failed", "none"):
        fail_input(InputError(f"--signals must be all, failed or none, got {signals!r}"))
    try:
        dataset = load_dataset(dataset_path)
        options = RunOptions(
            concurrency=concurrency,
            tags=tag or (),
            case_ids=case or (),
            fail_fast=fail_fast,
            timeout=timeout,
            repeat=repeat,
        )
        flags = ProviderFlags(
            provider, record, record_missing, replay, max_connections, judge_model, price or []
        )
        params = parse_params(param or [])
        if traces is None:
            params = flags.harness_params(dataset, harness, params)
        subject = build_harness(dataset, harness, params, traces, options)
        flags.configure_judge(dataset, options, params)
    except InputError as exc:
        fail_input(exc)
    selected = select_cases(dataset, options)
    started = now_iso()
    with Progress(len(selected), quiet=quiet) as progress:
        options.on_case_complete = progress
        try:
            result = asyncio.run(run_dataset(subject, dataset, options))
        except KeyboardInterrupt:
            result = partial_result(dataset, selected, progress.results, started)
    flags.finish(options)
    print_dataset(result, out)
    write_reports(result, output=output, markdown=markdown, junit=junit, signals=signals)  # type: ignore[arg-type]
    if result.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_FAILED)


def partial_result(
    dataset: EvalDataset, selected: list[Any], finished: list[CaseResult], started: str
) -> DatasetResult:
    """What finished before Ctrl-C, in dataset order."""
    order = {c.id: i for i, c in enumerate(selected)}
    cases = sorted(finished, key=lambda r: order.get(r.case_id, len(order)))
    return DatasetResult(
        dataset.name,
        cases,
        started_at=started,
        completed_at=now_iso(),
        metadata=dict(dataset.metadata),
        interrupted=True,
    )


@app.command()
def validate(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...", help="Datasets, scenarios, matrices (YAML/JSON) or traces (.jsonl)."
        ),
    ],
) -> None:
    """Validate files against their schemas; print every problem; exit 0 or 2."""
    invalid = 0
    for path in files:
        kind, problems = validate_path(path)
        if problems:
            invalid += 1
            print_problems(InputError(problems))
        else:
            out.print(f"[green]ok[/green] {path} ({kind})", highlight=False)
    raise typer.Exit(EXIT_INPUT if invalid else EXIT_OK)


from signal_eval_cli.cli_scenario import register as _register_scenario  # noqa: E402

_register_scenario(app)
from signal_eval_cli.cli_compare import register as _register_compare  # noqa: E402
from signal_eval_cli.cli_matrix import register as _register_matrix  # noqa: E402

_register_compare(app)
_register_matrix(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except InputError as exc:  # raised from deep inside a command: still no traceback
        print_problems(exc)
        sys.exit(EXIT_INPUT)


if __name__ == "__main__":
    main()
