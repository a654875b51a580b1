"""``signal-eval run``: run a dataset (or evaluate recorded traces) and print a table."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

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
    signals_policy,
    table_choice,
)
from signal_eval_cli.cli.executors import ExecutorOpt, RayActorsOpt, RayAddressOpt, dataset_run
from signal_eval_cli.cli.journaled import (
    ForceOpt,
    JournaledRun,
    ResumeOpt,
    RetryOpt,
    ShardOpt,
    shard_option,
)
from signal_eval_cli.cli.provider_options import ProviderPolicy, provider_options
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.interrupts import interrupts
from signal_eval_cli.partial import partial_dataset, stall_reason, stalled_dataset
from signal_eval_cli.reports.console import TableChoice, print_dataset
from signal_eval_cli.reports.reporters import reports_per_dataset
from signal_eval_cli.results import CaseResult, DatasetResult, SignalsPolicy
from signal_eval_cli.run_config import load_datasets, prepare_run
from signal_eval_cli.run_journals import case_entry, dataset_header, kept_cases
from signal_eval_cli.runner import (
    RunOptions,
    select_cases,
    stall_limit_s,
)
from signal_eval_cli.signals import now_iso
from signal_eval_cli.watchdog import LoopWatchdog

_T = TypeVar("_T")

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
        float | None, typer.Option(help="Per-case timeout in ms when the dataset sets none.")
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
        check_outputs(*each.values())
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
    """One dataset of ``run``: build its harness, run it, print its table, write its
    reports. Returns the result and the exit code should it be interrupted."""
    try:
        prepared = prepare_run(
            dataset,
            flags,
            options,
            harness=harness,
            params=params,
            traces=traces,
            export_env=executor[0] == "local",  # on Ray: each actor's own
        )
    except InputError as exc:
        fail_input(exc)
    selected = select_cases(dataset, options)
    header = dataset_header(dataset, options, flags, harness=harness, params=params, traces=traces)
    journal = JournaledRun(reports.get("json"), header, **journal_options)
    options.finished = kept_cases(journal.plan)
    started = now_iso()
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        try:
            with Progress(
                len(selected) - len(options.finished.keys() & {c.id for c in selected}), quiet=quiet
            ) as progress:

                def finished(result: CaseResult) -> None:
                    entry = case_entry(result)
                    if entry is not None:
                        journal.record(*entry)
                    progress(result)

                options.on_case_complete = finished

                def stalled(location: str, seconds: float) -> None:
                    progress.__exit__()
                    kept = [options.finished[c.id] for c in selected if c.id in options.finished]
                    done = [*kept, *progress.results]  # a resumed run's kept cases finished too
                    finish_stalled(
                        dataset,
                        selected,
                        done,
                        started,
                        location,
                        seconds,
                        (reports, signals, table),
                        running=list(options.running.values()),
                    )

                try:
                    running = dataset_run(
                        executor[0],
                        dataset,
                        prepared.harness,
                        options,
                        spec=prepared.spec,
                        ray_address=executor[1],
                        ray_actors=executor[2],
                    )
                    result = caught.run(watched(running, stall_limit_s(dataset, options), stalled))
                except KeyboardInterrupt:
                    result = partial_dataset(dataset, selected, progress.results, started)
                except InputError as exc:  # Ray could not start or join the cluster
                    fail_input(exc)
        finally:  # also on a crash: the proxy never outlives the run
            flags.finish(options)
        result = journal.result(result)  # what the journal holds
        print_dataset(result, out, table)
        write_command_reports(result, reports, signals=signals)
    return result, caught.exit_code


async def watched(run: Awaitable[_T], limit_s: float, on_stall: Callable[[str, float], None]) -> _T:
    """``run`` under a :class:`LoopWatchdog`."""
    async with LoopWatchdog(limit_s, on_stall):
        return await run


def finish_stalled(
    dataset: EvalDataset,
    selected: list[Any],
    finished: list[CaseResult],
    started: str,
    location: str,
    seconds: float,
    reports: tuple[ReportPaths, SignalsPolicy, TableChoice],
    *,
    running: list[tuple[str, float]],
) -> NoReturn:
    """The loop is stuck in a harness for good: report what finished, fail the rest with
    where the harness is stuck, write the reports and end the process (exit 1). A case
    that was ``running`` (case id, start) has the wall time it ran as its latency."""
    reason = stall_reason(location, seconds)
    result = stalled_dataset(dataset, selected, finished, started, reason, running=running)
    try:
        paths, signals, table = reports
        print_dataset(result, out, table)
        write_command_reports(result, paths, signals=signals)
        typer.echo(f"error: {reason}", err=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_FAILED)
