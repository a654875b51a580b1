"""``signal-eval matrix FILE``: run every variant over the dataset and recommend one.

A matrix is exploratory: it exits 0 when it ran, even if variants fail cases (gate
with ``run`` + ``compare``); 2 on invalid input; 130 when interrupted (the variants
that finished are kept in ``--output``).

Each variant's model calls go through its own model proxy and cassette (see
:func:`~signal_eval_cli.matrix.variant_cassette`), with ``run``'s flags: ``--replay``
(the default when the cassette exists), ``--record``, ``--record-missing``, ``--live``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated

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
    print_notices,
    signals_policy,
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
from signal_eval_cli.configured_runs import run_matrix_configured
from signal_eval_cli.errors import InputError
from signal_eval_cli.interrupts import interrupts
from signal_eval_cli.matrix import MatrixOptions, VariantResult, check_cassette_names, load_matrix
from signal_eval_cli.matrix_files import MatrixFile
from signal_eval_cli.process_scope import mark_children
from signal_eval_cli.reports.console_matrix import print_matrix, variant_line
from signal_eval_cli.run_config import files_read
from signal_eval_cli.scenarios.agents import scenario_files
from signal_eval_cli.scenarios.runner import ScenarioResult

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
    check_outputs(*reports.values(), inputs=[file])
    check_journal_free(reports)
    chosen_shard = shard_option(shard)
    flags = provider_policy
    try:
        _ = flags.mode  # two modes at once: bad input before anything loads
        matrix = load_matrix(file)
        check_cassette_names([v.id for v in matrix.variants])
    except InputError as exc:
        fail_input(exc)
    if isinstance(matrix, MatrixFile):  # no report over a file a variant reads
        print_notices(matrix.dataset.notices)
        read = [
            files_read(matrix.dataset, v.harness, v.params, v.base_dir) for v in matrix.variants
        ]
        check_outputs(*reports.values(), inputs=[file, *itertools.chain(*read)])
    else:  # nor over a scenario, or an agent a variant runs
        runs = [s for _, each in matrix.plans() for s in each]
        check_outputs(
            *reports.values(), inputs=[file, *(p for s in runs for p in scenario_files(s))]
        )
    progress = Progress(None, quiet=quiet)  # its total once the journal is read

    def variant_done(variant: VariantResult) -> None:
        if not quiet:
            err.print(variant_line(variant), highlight=False)

    def scenario_done(variant: str, result: ScenarioResult) -> None:
        run = f" (run {result.run + 1})" if (repeat or 1) > 1 else ""
        progress.tick(f"{variant} › {result.id}{run}", "pass" if result.passed else "FAIL")

    options = MatrixOptions(
        concurrency=concurrency,
        repeat=repeat,
        on_variant_complete=variant_done,
        on_variant_case=lambda variant, result: progress(result, label=variant),
        shard=chosen_shard,
    )
    mark_children()  # what the harnesses leave running ends with the command, orphans too
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        running = run_matrix_configured(
            matrix,
            flags,
            options,
            output=reports.get("json"),
            resume=resume,
            retry=retry,
            force=force,
            executor=executor,
            ray_address=ray_address,
            ray_actors=ray_actors,
            on_start=progress.begin,
            on_scenario_complete=scenario_done,
            note=journal_note,
        )
        result = ran(caught, progress, running)
        print_matrix(result, out)
        write_command_reports(result, reports, signals=policy)
    raise typer.Exit(caught.exit_code if result.interrupted else EXIT_OK)
