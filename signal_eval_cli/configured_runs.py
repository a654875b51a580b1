"""A matrix or a scenario run as its command makes it, in one call from Python.

Like :func:`~signal_eval_cli.configured_dataset.run_configured` for a dataset
(``signal-eval run``): the model calls go through the run's proxies in the mode a
:class:`~signal_eval_cli.run_config.ProviderPolicy` asks for (each matrix variant on its
own cassette, each scenario on its own), every recording is saved and every proxy
stopped at the end, even on failure, saying where recordings went (``policy.note``)::

    result = asyncio.run(run_matrix_configured("datasets/matrix-code-review.yaml"))
    run = asyncio.run(run_scenarios_configured(["scenarios/python-smoke.yaml"]))

Each takes the commands' choices as keywords (:class:`~signal_eval_cli.journaled.RunChoices`:
``output`` and its journal, ``resume``, ``retry``, ``force``, ``shard``, ``executor``,
``on_start``). Cancelled, a run returns what finished, ``interrupted``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from signal_eval_cli.executors import matrix_run, scenario_matrix_run, scenarios_run
from signal_eval_cli.journaled import (
    RunChoices,
    as_shard,
    executor_of,
    journal_of,
    partial_when_cancelled,
    starting,
)
from signal_eval_cli.matrix import (
    MatrixFile,
    MatrixOptions,
    MatrixResult,
    VariantResult,
    built_variants,
    check_cassette_names,
    load_matrix,
)
from signal_eval_cli.matrix_proxies import start_scenario_variant_proxies, start_variant_proxies
from signal_eval_cli.partial import partial_matrix, partial_scenarios
from signal_eval_cli.results import CaseResult
from signal_eval_cli.run_config import ProviderPolicy, stop_proxy
from signal_eval_cli.run_journals import (
    kept_matrix_cases,
    kept_scenario_matrix,
    kept_scenarios,
    matrix_header,
    scenario_entry,
    scenario_matrix_entry,
    scenario_matrix_header,
    scenarios_header,
)
from signal_eval_cli.runner import select_cases
from signal_eval_cli.scenarios import (
    Scenario,
    ScenarioResult,
    ScenarioRunResult,
    find_scenarios,
)
from signal_eval_cli.scenarios.matrix import ScenarioMatrix
from signal_eval_cli.scenarios.proxying import ScenarioProxies, stop_scenario_proxies
from signal_eval_cli.scenarios.runner import check_scenarios
from signal_eval_cli.sharding import take_shard
from signal_eval_cli.signals import now_iso

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["run_matrix_configured", "run_scenarios_configured"]


async def run_matrix_configured(
    matrix: MatrixFile | ScenarioMatrix | str | Path,
    policy: ProviderPolicy | None = None,
    options: MatrixOptions | None = None,
    *,
    root: Path | str | None = None,
    on_scenario_complete: Callable[[str, ScenarioResult], None] | None = None,
    **choices: Unpack[RunChoices],
) -> MatrixResult:
    """Run a matrix file (or one loaded) as ``signal-eval matrix`` does: every variant's
    harness built, each variant's proxy on its own cassette under ``policy``, then every
    variant over the dataset (``options``: concurrency, repeats, filters, callbacks); a
    matrix of agents over scenarios runs each variant over its scenarios (``root``: as
    :func:`~signal_eval_cli.scenarios.run_scenarios`'s; ``on_scenario_complete`` gets
    each run's variant id and result). ``choices``: see the module."""
    policy = policy or ProviderPolicy()
    _ = policy.mode  # two modes at once: bad input before anything loads
    if not isinstance(matrix, (MatrixFile, ScenarioMatrix)):
        matrix = load_matrix(matrix)
    check_cassette_names([v.id for v in matrix.variants])
    options = replace(options) if options is not None else MatrixOptions()
    if choices.get("shard") is not None:
        options.shard = as_shard(choices.get("shard"))
    executor, where = executor_of(choices)
    finished: list[VariantResult] = []
    then = options.on_variant_complete

    def variant_done(variant: VariantResult) -> None:
        finished.append(variant)
        if then is not None:
            then(variant)

    options.on_variant_complete = variant_done
    local = executor == "local"
    concurrency = options.concurrency if options.parallel else 1
    started = now_iso()
    if isinstance(matrix, ScenarioMatrix):
        repeat = options.repeat or 1
        check_scenarios(matrix.scenarios)  # before the fixtures are hashed: a fixture of / is not
        header = scenario_matrix_header(matrix, repeat=repeat, shard=options.shard)
        matrix = replace(
            matrix, scenarios=take_shard(matrix.scenarios, header.order, options.shard)
        )
        with journal_of(choices, header, policy.note) as journal:  # closed on a crash too
            kept = kept_scenario_matrix(journal.plan)

            def complete(variant: str, result: ScenarioResult) -> None:
                journal.record(*scenario_matrix_entry(variant, result))
                if on_scenario_complete is not None:
                    on_scenario_complete(variant, result)

            proxies = start_scenario_variant_proxies(
                matrix, policy, export_env=concurrency if local else None
            )
            try:
                starting(choices, len(matrix.scenarios) * repeat * len(matrix.variants) - len(kept))
                running = scenario_matrix_run(
                    executor,
                    matrix,
                    concurrency=concurrency,
                    **where,
                    root=root,
                    repeat=repeat,
                    on_variant_complete=variant_done,
                    finished=kept,
                    on_complete=complete,
                    proxies=proxies,
                )
                result = await partial_when_cancelled(
                    running, lambda: partial_matrix(matrix.name, finished, started)
                )
            finally:  # also on a crash: no proxy outlives the run
                for each in proxies.values():
                    stop_scenario_proxies(each, policy.note)
        return journal.result(result)
    selected = select_cases(matrix.dataset, options)
    # built before the journal opens (a variant that cannot be built leaves none behind);
    # on Ray each actor builds its own variants; here, before any proxy exports
    variants = built_variants(matrix.variants, matrix.dataset) if local else matrix.variants
    with journal_of(  # closed on a crash too
        choices, matrix_header(matrix, options, options.repeat), policy.note
    ) as journal:
        options.finished_by_variant = kept_matrix_cases(journal.plan, matrix, options)
        then_case = options.on_variant_case

        def finished_case(variant_id: str, result: CaseResult) -> None:
            journal.record_case(result, variant_id)
            if then_case is not None:
                then_case(variant_id, result)

        options.on_variant_case = finished_case
        options.proxies = start_variant_proxies(
            matrix, variants, policy, export_env=concurrency if local else None
        )
        try:
            kept_count = sum(len(f) for f in options.finished_by_variant.values())
            starting(choices, len(selected) * len(matrix.variants) - kept_count)
            running = matrix_run(
                executor,
                variants,
                matrix.dataset,
                options,
                name=matrix.name,
                **where,
            )
            result = await partial_when_cancelled(
                running, lambda: partial_matrix(matrix.name, finished, started)
            )
        finally:  # also on a crash: no proxy outlives the run
            for proxy in options.proxies.values():
                stop_proxy(proxy, policy.note)
    return journal.result(result)


async def run_scenarios_configured(
    scenarios: Sequence[Scenario | str],
    policy: ProviderPolicy | None = None,
    *,
    directory: Path = Path("scenarios"),
    root: Path | str | None = None,
    concurrency: int = 1,
    repeat: int = 1,
    keep_workdir: bool = False,
    on_complete: Callable[[ScenarioResult], None] | None = None,
    **choices: Unpack[RunChoices],
) -> ScenarioRunResult:
    """Run scenarios (or scenario files and ids, looked up in ``directory``) as
    ``signal-eval scenario`` does: their agents' and goals' model calls through each
    scenario's proxy on its cassette, in ``policy``'s mode; ``root``, ``concurrency``,
    ``repeat``, ``keep_workdir`` and ``on_complete`` as for
    :func:`~signal_eval_cli.scenarios.run_scenarios`. ``choices``: see the module."""
    policy = policy or ProviderPolicy()
    proxies = ScenarioProxies(policy.mode)
    chosen: list[Scenario] = []
    for each in scenarios:
        found = (
            [each] if isinstance(each, Scenario) else find_scenarios([each], directory=directory)
        )
        chosen += found
    part = as_shard(choices.get("shard"))
    executor, where = executor_of(choices)
    root = Path(root) if root is not None else None
    check_scenarios(chosen, root)  # before the fixtures are hashed: a fixture of / is not
    header = scenarios_header(chosen, root=root, repeat=repeat, shard=part)
    chosen = take_shard(chosen, header.order, part)
    with journal_of(choices, header, policy.note) as journal:  # closed on a crash too
        kept = kept_scenarios(journal.plan)
        finished: list[ScenarioResult] = list(kept.values())

        def complete(result: ScenarioResult) -> None:
            journal.record(*scenario_entry(result))
            finished.append(result)
            if on_complete is not None:
                on_complete(result)

        started_at, started = now_iso(), time.perf_counter()
        try:
            starting(choices, len(chosen) * repeat - len(kept))
            running = scenarios_run(
                executor,
                chosen,
                concurrency=concurrency,
                **where,
                root=root,
                keep_workdir=keep_workdir,
                on_complete=complete,
                repeat=repeat,
                finished=kept,
                proxies=proxies.start(chosen),  # on Ray: copies serve on the actors
            )
            # cancelled, the running scenarios' goals' groups are killed as they unwind
            run = await partial_when_cancelled(
                running, lambda: partial_scenarios(chosen, finished, started_at, started)
            )
        finally:  # also on a crash: no proxy outlives the run
            stop_scenario_proxies(proxies, policy.note)
    return journal.result(run)
