"""``signal-eval scenario``: run coding-agent scenarios and print their goals and assertions.

Kept apart from ``cli.py`` so the scenario feature plugs in with one ``register(app)``.
Exit codes as everywhere: 0 all passed, 1 any failed, 2 invalid input, 130 interrupted.
``--record`` / ``--record-missing`` / ``--replay`` / ``--live`` choose what the run's model
proxies do with the agents' and goals' model calls, as for ``run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Progress,
    QuietOpt,
    check_outputs,
    err,
    fail_input,
    out,
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
from signal_eval_cli.configured_runs import run_scenarios_configured
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.interrupts import interrupts
from signal_eval_cli.process_scope import mark_children
from signal_eval_cli.reports.console_scenarios import run_summary, scenario_tables
from signal_eval_cli.scenarios import (
    Scenario,
    ScenarioResult,
    find_scenarios,
    update_run,
)
from signal_eval_cli.scenarios.agents import scenario_files
from signal_eval_cli.workpaths import fixture_dir

__all__ = ["scenario_command", "scenario_tables"]


@report_options("scenarios")
@provider_options("record", "record_missing", "replay", "live", before="verbose")
def scenario_command(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="ID_OR_FILE",
            help="Scenario ids (looked up in --dir) or files ending in .json/.yaml/.yml.",
            show_default=False,
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every scenario file in --dir.")] = False,
    directory: Annotated[
        Path, typer.Option("--dir", help="Where scenario ids are looked up.")
    ] = Path("scenarios"),
    root: Annotated[
        Path | None,
        typer.Option(
            help="Fixture paths and scope: repo resolve against this directory "
            "(default: the scenario file's directory or its nearest parent holding the fixture).",
            show_default=False,
        ),
    ] = None,
    keep_workdir: Annotated[
        bool, typer.Option("--keep-workdir", help="Keep each temp working directory.")
    ] = False,
    update_expected: Annotated[
        bool,
        typer.Option(
            "--update-expected",
            help="Rewrite each failing diff-match expectedDiff from the actual diff.",
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Scenarios run at once.")] = 1,
    repeat: Annotated[
        int, typer.Option(min=1, help="Run each scenario N times; it passes only if all do.")
    ] = 1,
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
    """Run coding-agent scenarios: copy the fixture, apply the agentTask, run the goals."""
    check_outputs(*reports.values(), inputs=targets or ())
    check_journal_free(reports)
    chosen_shard = shard_option(shard)
    if not targets and not all_:
        fail_input(InputError("give scenario ids or files, or --all"))
    if update_expected and repeat > 1:
        fail_input(InputError("--update-expected runs each scenario once: drop --repeat"))
    try:
        _ = provider_policy.mode  # two modes at once: bad input before anything loads
        scenarios = find_scenarios(targets or [], directory=directory, include_all=all_)
        if not scenarios:
            raise InputError([Problem(str(directory), 0, 0, "no scenario files found")])
    except InputError as exc:
        fail_input(exc)
    _refuse_reports_in_fixtures(reports, scenarios, root)
    check_outputs(*reports.values(), inputs=[p for s in scenarios for p in scenario_files(s)])
    progress = Progress(None, quiet=quiet)  # its total once the journal is read

    def complete(result: ScenarioResult) -> None:
        name = f"{result.id} (run {result.run + 1})" if repeat > 1 else result.id
        progress.tick(name, "pass" if result.passed else "FAIL")

    mark_children()  # what an agent leaves running ends with the command, orphans too
    with interrupts() as caught:  # SIGTERM/SIGHUP like Ctrl-C; later ones wait for the write
        running = run_scenarios_configured(
            scenarios,
            provider_policy,
            root=root,
            concurrency=concurrency,
            repeat=repeat,
            keep_workdir=keep_workdir,
            on_complete=complete,
            output=reports.get("json"),
            resume=resume,
            retry=retry,
            force=force,
            shard=chosen_shard,
            executor=executor,
            ray_address=ray_address,
            ray_actors=ray_actors,
            on_start=progress.begin,
            note=journal_note,
        )
        run = ran(caught, progress, running)
        if update_expected and not run.interrupted:
            by_id = {s.id: s for s in scenarios}  # the run's: its shard, in its order
            for source, count in update_run([by_id[r.id] for r in run.scenarios], run):
                err.print(
                    f"updated expectedDiff of {count} diff-match assertion(s) in {source}",
                    highlight=False,
                )
        for result in run.scenarios:
            out.print(scenario_tables(result, width=out.width))
        out.print(run_summary(run))
        write_command_reports(run, reports, signals="failed")
    if run.interrupted:
        raise typer.Exit(caught.exit_code)
    raise typer.Exit(EXIT_OK if all(s.passed for s in run.scenarios) else EXIT_FAILED)


def _refuse_reports_in_fixtures(
    reports: ReportPaths, scenarios: list[Scenario], root: Path | None
) -> None:
    """A report inside a scenario's fixture would replace one of its files, or add one
    that every later copy of it holds: the fixture is never written to (exit 2)."""
    fixtures = {fixture_dir(s, root).resolve() for s in scenarios}
    problems = []
    for path in filter(None, reports.values()):
        inside = [f for f in fixtures if path.resolve().is_relative_to(f)]
        if inside:
            message = f"is inside the fixture {inside[0]}, which a run never writes to"
            problems.append(Problem(str(path), 0, 0, message))
    if problems:
        fail_input(InputError(problems))
