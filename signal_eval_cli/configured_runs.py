"""A matrix or a scenario run as its command makes it, in one call from Python.

Like :func:`~signal_eval_cli.run_config.run_configured` for a dataset (``signal-eval
run``): the model calls go through the run's proxies in the mode a
:class:`~signal_eval_cli.run_config.ProviderPolicy` asks for (each matrix variant on its
own cassette, each scenario on its own), every recording is saved and every proxy
stopped at the end, even on failure, saying where recordings went (``policy.note``)::

    result = asyncio.run(run_matrix_configured("datasets/matrix-code-review.yaml"))
    run = asyncio.run(run_scenarios_configured(["scenarios/python-smoke.yaml"]))

Journals, shards, Ray and the progress lines stay the commands' (see
:mod:`~signal_eval_cli.run_journals` and :mod:`~signal_eval_cli.executors`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from signal_eval_cli.matrix import (
    MatrixFile,
    MatrixOptions,
    MatrixResult,
    built_variants,
    check_cassette_names,
    load_matrix,
    run_matrix,
)
from signal_eval_cli.matrix_proxies import start_scenario_variant_proxies, start_variant_proxies
from signal_eval_cli.run_config import ProviderPolicy, stop_proxy
from signal_eval_cli.scenarios import Scenario, ScenarioRunResult, find_scenarios, run_scenarios
from signal_eval_cli.scenarios.matrix import ScenarioMatrix, run_scenario_matrix
from signal_eval_cli.scenarios.proxying import ScenarioProxies, stop_scenario_proxies

__all__ = ["run_matrix_configured", "run_scenarios_configured"]


async def run_matrix_configured(
    matrix: MatrixFile | ScenarioMatrix | str | Path,
    policy: ProviderPolicy | None = None,
    options: MatrixOptions | None = None,
    *,
    root: Path | str | None = None,
) -> MatrixResult:
    """Run a matrix file (or one loaded) as ``signal-eval matrix`` does: every variant's
    harness built, each variant's proxy on its own cassette under ``policy``, then every
    variant over the dataset (``options``: concurrency, repeats, filters, callbacks); a
    matrix of agents over scenarios runs each variant over its scenarios (``root``: as
    :func:`~signal_eval_cli.scenarios.run_scenarios`'s)."""
    if not isinstance(matrix, (MatrixFile, ScenarioMatrix)):
        matrix = load_matrix(matrix)
    policy = policy or ProviderPolicy()
    _ = policy.mode  # two modes at once: bad input before anything starts
    check_cassette_names([v.id for v in matrix.variants])
    options = replace(options) if options is not None else MatrixOptions()
    concurrency = options.concurrency if options.parallel else 1
    if isinstance(matrix, ScenarioMatrix):
        proxies = start_scenario_variant_proxies(matrix, policy, export_env=concurrency)
        try:
            return await run_scenario_matrix(
                matrix,
                root=root,
                concurrency=concurrency,
                repeat=options.repeat or 1,
                on_variant_complete=options.on_variant_complete,
                proxies=proxies,
            )
        finally:
            for each in proxies.values():
                stop_scenario_proxies(each, policy.note)
    variants = built_variants(matrix.variants, matrix.dataset)  # before any proxy exports
    options.proxies = start_variant_proxies(matrix, variants, policy, export_env=concurrency)
    try:
        return await run_matrix(variants, matrix.dataset, options, name=matrix.name)
    finally:
        for proxy in options.proxies.values():
            stop_proxy(proxy, policy.note)


async def run_scenarios_configured(
    scenarios: Sequence[Scenario | str],
    policy: ProviderPolicy | None = None,
    *,
    directory: Path = Path("scenarios"),
    **run: Any,
) -> ScenarioRunResult:
    """Run scenarios (or scenario files and ids, looked up in ``directory``) as
    ``signal-eval scenario`` does: their agents' and goals' model calls through each
    scenario's proxy on its cassette, in ``policy``'s mode. ``run``: the options of
    :func:`~signal_eval_cli.scenarios.run_scenarios` (``root``, ``concurrency``,
    ``repeat``, ``keep_workdir``, ``on_complete``)."""
    policy = policy or ProviderPolicy()
    chosen: list[Scenario] = []
    for each in scenarios:
        found = (
            [each] if isinstance(each, Scenario) else find_scenarios([each], directory=directory)
        )
        chosen += found
    proxies = ScenarioProxies(policy.mode).start(chosen)
    try:
        return await run_scenarios(chosen, proxies=proxies, **run)
    finally:
        stop_scenario_proxies(proxies, policy.note)
