"""``signal-eval run``: run a dataset (or evaluate recorded traces) and print a table."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from signal_eval_cli.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    HtmlOpt,
    JunitOpt,
    MarkdownOpt,
    OutputOpt,
    Progress,
    QuietOpt,
    SignalsOpt,
    TableOpt,
    check_outputs,
    fail_input,
    out,
    parse_params,
    signals_policy,
    table_choice,
    write_reports,
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
from signal_eval_cli.cli.provider_options import (
    JudgeModelOpt,
    LiveOpt,
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
from signal_eval_cli.fingerprint import dataset_fingerprint
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.recorded import RecordedTraces
from signal_eval_cli.interrupts import interrupts
from signal_eval_cli.journal import JournalHeader
from signal_eval_cli.reports.console import print_dataset
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.resume import build_dataset
from signal_eval_cli.runner import (
    RunOptions,
    check_filters,
    never_ran,
    select_cases,
    stall_limit_s,
)
from signal_eval_cli.signals import now_iso
from signal_eval_cli.watchdog import LoopWatchdog

_T = TypeVar("_T")

__all__ = ["build_harness", "partial_result", "run_command"]


def harness_spec(dataset: EvalDataset, harness: str | None, params: dict[str, Any]) -> HarnessSpec:
    """The entry point and params :func:`build_harness` resolves (what a Ray actor resolves)."""
    spec = HarnessSpec(harness, {}) if harness else dataset.harness
    assert spec is not None  # build_harness refused a dataset without one
    return HarnessSpec(spec.factory, {**spec.params, **params})


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
    return resolve_harness(spec.factory, {**spec.params, **params}, dataset_path=dataset.path)


def run_command(
    dataset_path: Annotated[Path, typer.Argument(metavar="DATASET", help="Dataset YAML file.")],
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
    output: OutputOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    html: HtmlOpt = None,
    signals: SignalsOpt = "failed",
    table: TableOpt = "auto",
    quiet: QuietOpt = False,
    provider: ProviderOpt = None,
    record: RecordOpt = False,
    record_missing: RecordMissingOpt = False,
    replay: ReplayOpt = False,
    live: LiveOpt = False,
    max_connections: MaxConnectionsOpt = None,
    judge_model: JudgeModelOpt = None,
    price: PriceOpt = None,
    resume: ResumeOpt = False,
    retry: RetryOpt = None,
    force: ForceOpt = False,
    shard: ShardOpt = None,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    ray_actors: RayActorsOpt = None,
) -> None:
    """Run a dataset (or evaluate recorded traces) and print a table of results."""
    policy = signals_policy(signals)
    rows = table_choice(table)
    check_outputs(output, markdown, junit, html)
    chosen_shard = shard_option(shard)
    try:
        dataset = load_dataset(dataset_path)
        options = RunOptions(
            concurrency=concurrency,
            tags=tag or (),
            case_ids=case or (),
            fail_fast=fail_fast,
            timeout=timeout,
            repeat=repeat,
            shard=chosen_shard,
        )
        check_filters(dataset, options)  # a typo'd --case/--tag must not run nothing, green
        flags = ProviderFlags(
            provider,
            record,
            record_missing,
            replay,
            max_connections,
            judge_model,
            price or [],
            live,
        )
        params = parse_params(param or [])
        meaning = {
            "params": params,
            "timeout": timeout,
            "repeat": repeat,
            "provider": provider,
            "judgeModel": judge_model,
            "price": price or [],
            "traces": str(traces) if traces else None,
        }
        if traces is None:
            params = flags.harness_params(dataset, harness, params)
        subject = build_harness(dataset, harness, params, traces, options)
        spec = harness_spec(dataset, harness, params) if traces is None else None
        flags.configure_judge(dataset, options, params)
        if traces is None:
            flags.start_proxy(dataset, options)
    except InputError as exc:
        fail_input(exc)
    selected = select_cases(dataset, options)
    header = JournalHeader(
        "dataset",
        dataset.name,
        [c.id for c in select_cases(dataset, replace(options, shard=None))],
        dataset_fingerprint(dataset, harness, meaning),
        chosen_shard,
        dict(dataset.metadata),
    )
    journal = JournaledRun(output, header, resume=resume, retry=retry, force=force)
    options.finished = {
        case_id: CaseResult.from_dict(data) for case_id, data in journal.plan.finished().items()
    }
    started = now_iso()
    reports: dict[str, Any] = {
        "output": output,
        "markdown": markdown,
        "junit": junit,
        "signals": policy,
        "html": html,
        "table": rows,
    }
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        try:
            with Progress(
                len(selected) - len(options.finished.keys() & {c.id for c in selected}), quiet=quiet
            ) as progress:

                def finished(result: CaseResult) -> None:
                    if not never_ran(result):
                        journal.record(("", result.case_id), result.to_dict("all"))
                    progress(result)

                options.on_case_complete = finished

                def stalled(location: str, seconds: float) -> None:
                    progress.__exit__()
                    kept = [options.finished[c.id] for c in selected if c.id in options.finished]
                    done = [*kept, *progress.results]  # a resumed run's kept cases finished too
                    finish_stalled(dataset, selected, done, started, location, seconds, reports)

                try:
                    running = dataset_run(
                        executor,
                        dataset,
                        subject,
                        options,
                        spec=spec,
                        ray_address=ray_address,
                        ray_actors=ray_actors,
                    )
                    result = caught.run(watched(running, stall_limit_s(dataset, options), stalled))
                except KeyboardInterrupt:
                    result = partial_result(dataset, selected, progress.results, started)
                except InputError as exc:  # Ray could not start or join the cluster
                    fail_input(exc)
        finally:  # also on a crash: the proxy never outlives the run
            flags.finish(options)
        entries = journal.entries()
        if entries is not None:  # the results are what the journal holds
            result = build_dataset(header, entries, ran=result)
        print_dataset(result, out, reports.pop("table"))
        write_reports(result, **reports)
    if result.interrupted:
        raise typer.Exit(caught.exit_code)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_FAILED)


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
    reports: dict[str, Any],
) -> NoReturn:
    """The loop is stuck in a harness for good: report what finished, fail the rest with
    where the harness is stuck, write the reports and end the process (exit 1)."""
    reason = (
        f"the event loop was blocked at {location} for {seconds:.1f} s, longer than the case timeout: "
        "an async harness called blocking code (time.sleep, a sync SDK); await an async "
        "call instead, or run the blocking one with asyncio.to_thread"
    )
    done = list(finished)
    ids = {r.case_id for r in done}
    for case in selected:
        if case.id not in ids:
            error = f"not finished: {reason}" if not case.skip else None
            done.append(
                CaseResult(
                    case.id,
                    passed=case.skip,
                    name=case.name,
                    skipped=case.skip,
                    error=error,
                    tags=list(case.tags),
                )
            )
    result = partial_result(dataset, selected, done, started, interrupted=False)
    try:
        print_dataset(result, out, reports.pop("table"))
        write_reports(result, **reports)
        typer.echo(f"error: {reason}", err=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_FAILED)


def partial_result(
    dataset: EvalDataset,
    selected: list[Any],
    finished: list[CaseResult],
    started: str,
    *,
    interrupted: bool = True,
) -> DatasetResult:
    """What finished before Ctrl-C (or a stuck loop), in dataset order."""
    order = {c.id: i for i, c in enumerate(selected)}
    cases = sorted(finished, key=lambda r: order.get(r.case_id, len(order)))
    return DatasetResult(
        dataset.name,
        cases,
        started_at=started,
        completed_at=now_iso(),
        metadata=dict(dataset.metadata),
        interrupted=interrupted,
    )
