"""``signal-eval matrix FILE``: run every variant over the dataset and recommend one.

A matrix is exploratory: it exits 0 when it ran, even if variants fail cases (gate
with ``run`` + ``compare``); 2 on invalid input; 130 when interrupted (the variants
that finished are kept in ``--output``).

Each variant's model calls go through its own model proxy and cassette (see
:func:`~signal_eval_cli.matrix.variant_cassette`), with ``run``'s flags: ``--replay``
(the default when the cassette exists), ``--record``, ``--record-missing``, ``--live``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import (
    EXIT_OK,
    Progress,
    QuietOpt,
    SignalsOpt,
    check_outputs,
    err,
    fail_input,
    out,
    signals_policy,
)
from signal_eval_cli.cli.executors import (
    ExecutorOpt,
    RayActorsOpt,
    RayAddressOpt,
    matrix_run,
    scenario_matrix_run,
)
from signal_eval_cli.cli.journaled import (
    ForceOpt,
    JournaledRun,
    ResumeOpt,
    RetryOpt,
    ShardOpt,
    shard_option,
)
from signal_eval_cli.cli.provider_options import ProviderPolicy, provider_options, stop_proxy
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.errors import InputError
from signal_eval_cli.interrupts import Interrupts, interrupts
from signal_eval_cli.matrix import (
    MatrixOptions,
    MatrixResult,
    VariantResult,
    built_variants,
    check_cassette_names,
    load_matrix,
)
from signal_eval_cli.matrix_proxies import start_scenario_variant_proxies, start_variant_proxies
from signal_eval_cli.partial import partial_matrix
from signal_eval_cli.reports.console_matrix import print_matrix, variant_line
from signal_eval_cli.results import CaseResult, SignalsPolicy
from signal_eval_cli.run_journals import (
    case_entry,
    kept_matrix_cases,
    kept_scenario_matrix,
    matrix_header,
    scenario_matrix_entry,
    scenario_matrix_header,
)
from signal_eval_cli.runner import select_cases
from signal_eval_cli.scenarios.matrix import ScenarioMatrix
from signal_eval_cli.scenarios.proxying import stop_scenario_proxies
from signal_eval_cli.scenarios.runner import ScenarioResult
from signal_eval_cli.sharding import Shard, take_shard
from signal_eval_cli.signals import now_iso

if TYPE_CHECKING:
    pass

__all__ = ["matrix_command"]


@report_options("matrix")
@provider_options("record", "record_missing", "replay", "live", "price", before="verbose")
def matrix_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Matrix YAML file.")],
    concurrency: Annotated[
        int, typer.Option(min=1, help="Cases run at once, shared by all variants.")
    ] = 4,
    repeat: Annotated[
        int | None, typer.Option(min=1, help="Run each case N times; report flakiness.")
    ] = None,
    signals: SignalsOpt = "failed",
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
    """Run a matrix of harness variants over one dataset (or of agents over scenarios);
    rank them and recommend one."""
    policy = signals_policy(signals)
    check_outputs(*reports.values())
    chosen_shard = shard_option(shard)
    flags = provider_policy
    try:
        _ = flags.mode  # two modes at once: bad input before anything loads
        matrix = load_matrix(file)
        check_cassette_names([v.id for v in matrix.variants])
    except InputError as exc:
        fail_input(exc)
    finished: list[VariantResult] = []

    def variant_done(variant: VariantResult) -> None:
        finished.append(variant)
        if not quiet:
            err.print(variant_line(variant), highlight=False)

    started = now_iso()
    if isinstance(matrix, ScenarioMatrix):
        journal_options = {"resume": resume, "retry": retry, "force": force}
        executor_options = {"ray_address": ray_address, "ray_actors": ray_actors}
        _scenario_matrix(
            matrix,
            (executor, flags),
            reports,
            policy,
            concurrency=concurrency,
            repeat=repeat or 1,
            shard=chosen_shard,
            quiet=quiet,
            on_variant_complete=variant_done,
            journal_options=journal_options,
            executor_options=executor_options,
        )
    options = MatrixOptions(
        concurrency=concurrency,
        repeat=repeat,
        on_variant_complete=variant_done,
        shard=chosen_shard,
    )
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        selected = select_cases(matrix.dataset, options)
        header = matrix_header(matrix, options, repeat)
        journal = JournaledRun(reports.get("json"), header, resume=resume, retry=retry, force=force)
        options.finished_by_variant = kept_matrix_cases(journal.plan, matrix, options)
        kept = sum(len(f) for f in options.finished_by_variant.values())

        started = now_iso()
        try:  # on Ray: each actor builds its own
            local = executor == "local"
            variants = built_variants(matrix.variants, matrix.dataset) if local else matrix.variants
        except InputError as exc:
            fail_input(exc)
        try:
            options.proxies = start_variant_proxies(
                matrix,
                variants,
                flags,
                export_env=(options.concurrency if options.parallel else 1) if local else None,
            )
        except InputError as exc:
            fail_input(exc)
        try:
            with Progress(len(selected) * len(matrix.variants) - kept, quiet=quiet) as progress:

                def finished_case(variant_id: str, result: CaseResult) -> None:
                    entry = case_entry(result, variant_id)
                    if entry is not None:
                        journal.record(*entry)
                    progress(result, label=variant_id)

                options.on_variant_case = finished_case
                running = matrix_run(
                    executor,
                    variants,
                    matrix.dataset,
                    options,
                    name=matrix.name,
                    ray_address=ray_address,
                    ray_actors=ray_actors,
                )
                result = _ran(caught, running, matrix.name, finished, started)
        finally:  # also on a crash: no proxy outlives the run
            for proxy in options.proxies.values():
                stop_proxy(proxy)
        _finish(result, journal, reports, policy, caught.exit_code)


def _scenario_matrix(
    matrix: ScenarioMatrix,
    how: tuple[str, ProviderPolicy],
    reports: ReportPaths,
    policy: SignalsPolicy,
    *,
    concurrency: int,
    repeat: int,
    shard: Shard | None,
    quiet: bool,
    on_variant_complete: Callable[[VariantResult], None],
    journal_options: dict[str, Any],
    executor_options: dict[str, Any],
) -> NoReturn:
    """A matrix of agents over scenarios: each run of a scenario by a variant is a unit of
    the journal (resumed, retried like a dataset matrix's cases); each variant's model
    calls go through its own proxies (``how``: the executor and the proxy flags)."""
    executor, flags = how
    header = scenario_matrix_header(matrix, repeat=repeat, shard=shard)
    matrix = replace(matrix, scenarios=take_shard(matrix.scenarios, header.order, shard))
    journal = JournaledRun(reports.get("json"), header, **journal_options)
    kept = kept_scenario_matrix(journal.plan)
    total = len(matrix.scenarios) * repeat * len(matrix.variants) - len(kept)
    finished: list[VariantResult] = []

    def variant_done(variant: VariantResult) -> None:
        finished.append(variant)
        on_variant_complete(variant)

    started = now_iso()
    try:
        proxies = start_scenario_variant_proxies(
            matrix, flags, export_env=concurrency if executor == "local" else None
        )
    except InputError as exc:
        fail_input(exc)
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        try:
            with Progress(total, quiet=quiet) as progress:

                def complete(variant: str, result: ScenarioResult) -> None:
                    journal.record(*scenario_matrix_entry(variant, result))
                    name = f"{variant} › {result.id}" + (
                        f" (run {result.run + 1})" if repeat > 1 else ""
                    )
                    progress.tick(name, "pass" if result.passed else "FAIL")

                running = scenario_matrix_run(
                    executor,
                    matrix,
                    concurrency=concurrency,
                    repeat=repeat,
                    on_variant_complete=variant_done,
                    finished=kept,
                    on_complete=complete,
                    proxies=proxies,
                    **executor_options,
                )
                result = _ran(caught, running, matrix.name, finished, started)
        finally:  # also on a crash: no proxy outlives the run
            for each in proxies.values():
                stop_scenario_proxies(each)
        _finish(result, journal, reports, policy, caught.exit_code)


def _ran(
    caught: Interrupts,
    running: Coroutine[Any, Any, MatrixResult],
    name: str,
    finished: list[VariantResult],
    started: str,
) -> MatrixResult:
    """The matrix's result; stopped by a signal, the variants that finished, interrupted."""
    try:
        return caught.run(running)
    except InputError as exc:  # Ray could not start or join the cluster
        fail_input(exc)
    except KeyboardInterrupt:
        return partial_matrix(name, finished, started)


def _finish(
    result: MatrixResult,
    journal: JournaledRun,
    reports: ReportPaths,
    policy: SignalsPolicy,
    interrupted_code: int,
) -> NoReturn:
    """Print and write the results: what the journal holds (when there is one), built
    with the timings of ``result``, the run that wrote it."""
    result = journal.result(result)
    print_matrix(result, out)
    write_command_reports(result, reports, signals=policy)
    raise typer.Exit(interrupted_code if result.interrupted else EXIT_OK)
