"""Where a run's units execute: on this event loop (``local``) or on Ray actors (``ray``).

One choice for every kind of run (a dataset, a matrix, scenarios, a matrix over
scenarios), made before anything runs: an executor that is neither, or Ray missing, is
an :class:`InputError` when the run is built. Ray is imported only when chosen.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from signal_eval_cli.dataset import EvalDataset, HarnessSpec
from signal_eval_cli.errors import InputError
from signal_eval_cli.results import DatasetResult
from signal_eval_cli.runner import RunOptions, run_dataset

if TYPE_CHECKING:  # a plain run imports neither the matrix nor the scenario machinery
    from signal_eval_cli.matrix import MatrixOptions, MatrixResult, Variant
    from signal_eval_cli.ray_executor import RaySettings
    from signal_eval_cli.scenarios import Scenario, ScenarioRunResult
    from signal_eval_cli.scenarios.matrix import ScenarioMatrix

__all__ = [
    "dataset_run",
    "matrix_run",
    "ray_settings",
    "scenario_matrix_run",
    "scenarios_run",
]


def dataset_run(
    executor: str,
    dataset: EvalDataset,
    harness: Any,
    options: RunOptions,
    *,
    spec: HarnessSpec | None,
    ray_address: str | None = None,
    ray_actors: int | None = None,
) -> Coroutine[Any, Any, DatasetResult]:
    """The coroutine running ``dataset``: on this event loop, or on Ray actors that
    build the harness from ``spec`` themselves. Without a ``spec`` (``--traces``) the
    harness, recorded traces, travels to them as it is."""
    if executor == "local":
        return run_dataset(harness, dataset, options)
    settings = ray_settings(executor, options.concurrency, ray_address, ray_actors)
    from signal_eval_cli.ray_executor import VariantSpec, run_dataset_ray

    if spec is None:
        return run_dataset_ray(dataset, VariantSpec("", built=harness), options, settings)
    base_dir = dataset.path.parent.resolve() if dataset.path else None  # actors' cwd differs
    return run_dataset_ray(
        dataset, VariantSpec(spec.factory, dict(spec.params), base_dir), options, settings
    )


def ray_settings(
    executor: str, concurrency: int, address: str | None, actors: int | None
) -> RaySettings:
    """Settings for ``ray`` (Ray importable), or :class:`InputError` saying what is wrong."""
    if executor != "ray":
        raise InputError(f"--executor must be local or ray, got {executor!r}")
    from signal_eval_cli.ray_executor import RaySettings, import_ray

    import_ray()
    return RaySettings(address=address, actors=actors, concurrency=concurrency)


def matrix_run(
    executor: str,
    variants: Sequence[Variant],
    dataset: EvalDataset,
    options: MatrixOptions,
    *,
    name: str,
    ray_address: str | None = None,
    ray_actors: int | None = None,
) -> Coroutine[Any, Any, MatrixResult]:
    """The coroutine running a matrix: here, or on Ray actors holding every variant."""
    if executor == "local":
        from signal_eval_cli.matrix import run_matrix

        return run_matrix(variants, dataset, options, name=name)
    settings = ray_settings(executor, options.concurrency, ray_address, ray_actors)
    from signal_eval_cli.ray_executor import run_matrix_ray

    return run_matrix_ray(variants, dataset, options, settings, name=name)


def scenario_matrix_run(
    executor: str,
    matrix: ScenarioMatrix,
    *,
    concurrency: int,
    ray_address: str | None = None,
    ray_actors: int | None = None,
    **run: Any,
) -> Coroutine[Any, Any, MatrixResult]:
    """The coroutine running a matrix of agents over scenarios: here, one variant after
    the other, or on Ray actors sharing every variant's scenarios (fixtures travel
    along). ``run``: the runner's other options."""
    if executor == "local":
        from signal_eval_cli.scenarios.matrix import run_scenario_matrix

        return run_scenario_matrix(matrix, concurrency=concurrency, **run)
    settings = ray_settings(executor, concurrency, ray_address, ray_actors)
    from signal_eval_cli.scenarios.on_ray import run_scenario_matrix_ray

    return run_scenario_matrix_ray(matrix, settings, **run)


def scenarios_run(
    executor: str,
    scenarios: Sequence[Scenario],
    *,
    concurrency: int,
    ray_address: str | None = None,
    ray_actors: int | None = None,
    **run: Any,
) -> Coroutine[Any, Any, ScenarioRunResult]:
    """The coroutine running scenarios: here, or on Ray actors (fixtures travel along),
    each running ``concurrency`` scenarios at once. ``run``: the runner's other options."""
    if executor == "local":
        from signal_eval_cli.scenarios import run_scenarios

        return run_scenarios(scenarios, concurrency=concurrency, **run)
    settings = ray_settings(executor, concurrency, ray_address, ray_actors)
    from signal_eval_cli.scenarios.on_ray import run_scenarios_ray

    return run_scenarios_ray(scenarios, settings, **run)
