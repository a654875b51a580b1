"""``signal-eval run``: run a dataset (or evaluate recorded traces) and print a table."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from signal_eval_cli.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    HtmlOpt,
    JunitOpt,
    MarkdownOpt,
    OutputOpt,
    Progress,
    QuietOpt,
    SignalsOpt,
    check_outputs,
    fail_input,
    out,
    parse_params,
    signals_policy,
    write_reports,
)
from signal_eval_cli.cli.provider_options import (
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
from signal_eval_cli.reports.console import print_dataset
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.runner import RunOptions, check_filters, run_dataset, select_cases
from signal_eval_cli.signals import now_iso

__all__ = ["build_harness", "partial_result", "run_command"]


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


def run_command(
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
    html: HtmlOpt = None,
    signals: SignalsOpt = "failed",
    quiet: QuietOpt = False,
    provider: ProviderOpt = None,
    record: RecordOpt = False,
    record_missing: RecordMissingOpt = False,
    replay: ReplayOpt = False,
    max_connections: MaxConnectionsOpt = None,
    judge_model: JudgeModelOpt = None,
    price: PriceOpt = None,
) -> None:
    """Run a dataset (or evaluate recorded traces) and print a table of results."""
    policy = signals_policy(signals)
    check_outputs(output, markdown, junit, html)
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
        check_filters(dataset, options)  # a typo'd --case/--tag must not run nothing, green
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
    write_reports(result, output=output, markdown=markdown, junit=junit, signals=policy, html=html)
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
