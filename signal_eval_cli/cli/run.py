"""``signal-eval run``: run a dataset (or evaluate recorded traces) and print a table."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Progress,
    QuietOpt,
    SignalsOpt,
    TableOpt,
    check_outputs,
    err,
    fail_input,
    out,
    parse_params,
    positive_ms,
    print_notices,
    signals_policy,
    table_choice,
)
from signal_eval_cli.cli.executors import ExecutorOpt, RayActorsOpt, RayAddressOpt
from signal_eval_cli.cli.journaled import (
    ForceOpt,
    ResumeOpt,
    RetryOpt,
    ShardOpt,
    check_journal_free,
    journal_note,
    ran,
    shard_option,
)
from signal_eval_cli.cli.provider_options import ProviderPolicy, provider_options
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.configured_dataset import run_configured
from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.deadline import exit_process
from signal_eval_cli.errors import InputError
from signal_eval_cli.interrupts import interrupts
from signal_eval_cli.process_scope import kill_descendants, mark_children
from signal_eval_cli.reports.console import TableChoice, print_dataset
from signal_eval_cli.reports.reporters import reports_per_dataset
from signal_eval_cli.results import DatasetResult, SignalsPolicy
from signal_eval_cli.run_config import files_read, load_datasets
from signal_eval_cli.runner import RunOptions

__all__ = ["run_command"]


@report_options("dataset")
@provider_options(
    "provider",
    "record",
    "record_missing",
    "replay",
    "live",
    "max_connections",
    "judge_model",
    "price",
    before="resume",
)
def run_command(
    dataset_paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="DATASET...",
            help="Dataset YAML files, run one after another (each its own result).",
        ),
    ],
    traces: Annotated[
        Path | None,
        typer.Option(
            help="Evaluate recorded traces DIR/<case-id>.jsonl (or .json: OpenAI Agents SDK, OTLP/JSON, LangGraph) instead of running a harness."
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
        float | None,
        typer.Option(
            callback=positive_ms, help="Per-case timeout in ms when the dataset sets none."
        ),
    ] = None,
    repeat: Annotated[
        int | None, typer.Option(min=1, help="Run each case N times; report flakiness.")
    ] = None,
    signals: SignalsOpt = "failed",
    table: TableOpt = "auto",
    quiet: QuietOpt = False,
    resume: ResumeOpt = False,
    retry: RetryOpt = None,
    force: ForceOpt = False,
    shard: ShardOpt = None,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    ray_actors: RayActorsOpt = None,
    verbose: VerboseOpt = False,
    *,
    reports: ReportPaths,
    provider_policy: ProviderPolicy,
) -> None:
    """Run datasets (or evaluate recorded traces) and print a table of results."""
    policy = signals_policy(signals)
    rows = table_choice(table)
    try:
        paths = reports_per_dataset(dataset_paths, reports)
    except InputError as exc:
        fail_input(exc)
    for each in paths:
        check_outputs(*each.values(), inputs=dataset_paths)
        check_journal_free(each)
    chosen_shard = shard_option(shard)
    options = RunOptions(
        concurrency=concurrency,
        tags=tag or (),
        case_ids=case or (),
        fail_fast=fail_fast,
        timeout=timeout,
        repeat=repeat,
        shard=chosen_shard,
    )
    flags = provider_policy
    params = parse_params(param or [])
    try:
        datasets = load_datasets(
            dataset_paths,
            options,
            harness=harness,
            params=params,
            policy=flags,
            traces=traces is not None,
            note=lambda message: err.print(message, highlight=False),
        )
    except InputError as exc:
        fail_input(exc)
    for dataset, each in zip(datasets, paths, strict=True):  # no report over what it reads
        if dataset is not None:
            print_notices(dataset.notices)
            read = files_read(dataset, harness, params, Path.cwd())
            if traces is not None:  # a file of the traces' folder is a trace it reads
                read += [p for p in each.values() if p and p.parent.resolve() == traces.resolve()]
            check_outputs(*each.values(), inputs=read)
    totals: list[DatasetResult] = []
    for dataset, its_reports in zip(datasets, paths, strict=True):
        if dataset is None:
            continue  # the filters select none of its cases (said when loading)
        result, interrupted_code = run_dataset_command(
            dataset,
            replace(options),
            flags,
            harness=harness,
            params=params,
            traces=traces,
            signals=policy,
            table=rows,
            reports=its_reports,
            quiet=quiet,
            journal_options={"resume": resume, "retry": retry, "force": force},
            executor=(executor, ray_address, ray_actors),
        )
        totals.append(result)
        if result.interrupted:
            raise typer.Exit(interrupted_code)
    if len(totals) > 1:
        out.print(totals_line(totals))
    raise typer.Exit(EXIT_OK if all(r.passed for r in totals) else EXIT_FAILED)


def totals_line(results: list[DatasetResult]) -> str:
    passed = sum(r.passed_cases for r in results)
    failed = sum(r.failed_cases for r in results)
    skipped = sum(r.skipped_cases for r in results)
    return f"{len(results)} datasets: {passed} passed, {failed} failed, {skipped} skipped"


def run_dataset_command(
    dataset: EvalDataset,
    options: RunOptions,
    flags: ProviderPolicy,
    *,
    harness: str | None,
    params: dict[str, Any],
    traces: Path | None,
    signals: SignalsPolicy,
    table: TableChoice,
    reports: ReportPaths,
    quiet: bool,
    journal_options: dict[str, Any],
    executor: tuple[str, str | None, int | None],
) -> tuple[DatasetResult, int]:
    """One dataset of ``run``: run it (:func:`run_configured`), print its table, write its
    reports. Returns the result and the exit code should it be interrupted."""
    progress = Progress(None, quiet=quiet)  # its total once the journal is read
    options.on_case_complete = progress

    def stalled(result: DatasetResult, reason: str) -> None:
        progress.__exit__()
        finish_stalled(result, reason, (reports, signals, table))

    mark_children()  # what the harness leaves running ends with the command, orphans too
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        running = run_configured(
            dataset,
            flags,
            options,
            harness=harness,
            params=params,
            traces=traces,
            output=reports.get("json"),
            **journal_options,
            executor=executor[0],
            ray_address=executor[1],
            ray_actors=executor[2],
            on_start=progress.begin,
            on_stall=stalled,
            note=journal_note,
        )
        result = ran(caught, progress, running)
        print_dataset(result, out, table)
        write_command_reports(result, reports, signals=signals)
    return result, caught.exit_code


def finish_stalled(
    result: DatasetResult,
    reason: str,
    reports: tuple[ReportPaths, SignalsPolicy, TableChoice],
) -> NoReturn:
    """The loop is stuck in a harness for good: report what finished and the rest failed
    with where the harness is stuck (``result``), write the reports and end the process
    (exit 1)."""
    try:
        paths, signals, table = reports
        print_dataset(result, out, table)
        write_command_reports(result, paths, signals=signals)
        typer.echo(f"error: {reason}", err=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        kill_descendants()  # what the harness started: it would hold a `| cat` open
        exit_process(EXIT_FAILED)  # not os._exit: the stuck harness's refusal is in place
