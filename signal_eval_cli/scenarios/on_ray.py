"""Scenarios on Ray (``scenario --executor ray``): each actor runs whole scenarios —
workspace, agent, goals, assertions — so the CPU-heavy goals run on the cluster.

The fixtures travel with the job (one tar archive each). An actor uses a fixture in place
when the same directory, with the same content, is there (the driver's machine, a shared
filesystem): its results then equal a local run's, minus timings. Elsewhere it unpacks the
shipped copy into a temporary directory of its own and runs from there. What else a
scenario names outside its fixture (``scope: repo`` files, an agent's script) must exist at
the same path on the nodes, like a dataset's harness module.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signal_eval_cli.fingerprint import tree_hash
from signal_eval_cli.journal import run_slot, slot_run
from signal_eval_cli.matrix_model import MatrixResult, VariantResult
from signal_eval_cli.proxy.recorder import Handover
from signal_eval_cli.ray_executor import DIED, RaySettings, run_units_ray
from signal_eval_cli.scenarios.matrix import (
    Finished,
    ScenarioMatrix,
    ScenarioVariant,
    matrix_result,
    variant_result,
)
from signal_eval_cli.scenarios.model import Scenario
from signal_eval_cli.scenarios.proxying import ScenarioProxies
from signal_eval_cli.scenarios.runner import (
    ScenarioResult,
    ScenarioRunResult,
    check_scenarios,
    fixture_dir,
    project_root,
    run_scenario,
)
from signal_eval_cli.signals import now_iso

__all__ = ["run_scenario_matrix_ray", "run_scenarios_ray"]


@dataclass(slots=True)
class _ShippedFixture:
    """A fixture directory as the driver saw it: where, its content hash, its files."""

    path: str
    digest: str
    archive: bytes

    @classmethod
    def of(cls, directory: Path) -> _ShippedFixture:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            tar.add(directory, arcname=".")
        return cls(str(directory), tree_hash(directory), buffer.getvalue())

    def materialize(self) -> str:
        """The fixture's path on this machine: the original when it is the same, else a
        fresh copy unpacked from the archive."""
        here = Path(self.path)
        if here.is_dir() and tree_hash(here) == self.digest:
            return self.path
        target = Path(tempfile.mkdtemp(prefix="signal-eval-fixture-")) / here.name
        with tarfile.open(fileobj=io.BytesIO(self.archive), mode="r:gz") as tar:
            data_filter = getattr(tarfile, "data_filter", None)  # refuses links leading out
            if data_filter is not None:
                tar.extractall(target, filter=data_filter)
            else:  # pragma: no cover - a Python without extraction filters
                tar.extractall(target)  # our own archive of the fixture
        return str(target)


_Outcome = tuple[dict[str, Any], Handover | None]
"""A scenario run's result (as JSON) and what its proxy did, as an actor sends them."""


@dataclass(slots=True)
class _ScenariosJob:
    """The scenarios, their fixtures, and how each actor runs them (a :class:`Job`)."""

    scenarios: list[Scenario]
    fixtures: dict[str, _ShippedFixture]
    roots: list[str]
    """Each scenario's :func:`project_root` on the driver (``scope: repo`` reads there)."""
    keep_workdir: bool
    proxies: list[ScenarioProxies | None] = field(default_factory=list)
    """Each scenario's model proxies (copies on the actors): the run's, or in a matrix its
    variant's."""
    local: dict[str, str] = field(default_factory=dict)
    """On the actor: each shipped fixture's path there."""

    def prepare(self) -> None:
        self.local = {path: shipped.materialize() for path, shipped in self.fixtures.items()}
        for proxies in {id(p): p for p in self.proxies if p is not None}.values():
            proxies.serve()

    async def run(
        self, variant: str, indices: list[int], semaphore: asyncio.Semaphore, concurrency: int
    ) -> list[_Outcome]:
        async def one(index: int) -> _Outcome:
            scenario = self.scenarios[index]
            root = self.roots[index]
            where = self.local[str(fixture_dir(scenario, root))]
            here = dataclasses.replace(
                scenario, fixture=dataclasses.replace(scenario.fixture, path=where)
            )
            proxies, run = self.proxies[index], slot_run(variant)
            async with semaphore:
                result = await run_scenario(
                    here, root=root, keep_workdir=self.keep_workdir, proxies=proxies, run=run
                )
            handover = proxies.take(scenario) if proxies is not None else None
            return result.to_journal(), handover

        return list(await asyncio.gather(*(one(i) for i in indices)))

    def died(self, variant: str, index: int) -> _Outcome:
        scenario = self.scenarios[index]
        result = ScenarioResult(
            scenario.id,
            passed=False,
            title=scenario.title,
            adapter_id=scenario.adapter_id,
            error=DIED,
            source=str(scenario.source) if scenario.source else None,
            tags=list(scenario.tags),
            run=slot_run(variant),
        )
        return result.to_journal(), None


async def run_scenarios_ray(
    scenarios: Sequence[Scenario],
    settings: RaySettings,
    *,
    root: Path | str | None = None,
    keep_workdir: bool = False,
    on_complete: Callable[[ScenarioResult], None] | None = None,
    repeat: int = 1,
    finished: Mapping[tuple[str, int], ScenarioResult] | None = None,
    proxies: ScenarioProxies | None = None,
) -> ScenarioRunResult:
    """:func:`~signal_eval_cli.scenarios.runner.run_scenarios` on Ray actors (each runs
    ``settings.concurrency`` scenarios at once): the same result, minus timings.
    ``proxies`` (started here) serve on the actors as copies; they keep what each
    scenario run recorded."""
    index = {s.id: i for i, s in enumerate(scenarios)}
    kept = {(index[sid], run): r for (sid, run), r in (finished or {}).items() if sid in index}
    return await _run_on_ray(
        scenarios,
        settings,
        root=root,
        keep_workdir=keep_workdir,
        repeat=repeat,
        kept=kept,
        on_complete=(lambda _, result: on_complete(result)) if on_complete else None,
        proxies=[proxies] * len(scenarios),
    )


async def _run_on_ray(
    scenarios: Sequence[Scenario],
    settings: RaySettings,
    *,
    root: Path | str | None,
    keep_workdir: bool,
    repeat: int,
    kept: Mapping[tuple[int, int], ScenarioResult],
    on_complete: Callable[[int, ScenarioResult], None] | None,
    proxies: list[ScenarioProxies | None],
) -> ScenarioRunResult:
    """Every run of ``scenarios`` (by index: the same id may stand twice, once per
    matrix variant) but those ``kept`` by (index, run), each with its ``proxies`` (by
    index); ``on_complete`` gets the index and the result of each run that ran."""
    started_at, started = now_iso(), time.perf_counter()
    check_scenarios(scenarios, root)
    roots = [str(project_root(s, root)) for s in scenarios]
    directories = {str(fixture_dir(s, r)) for s, r in zip(scenarios, roots, strict=True)}
    job = _ScenariosJob(
        [dataclasses.replace(s, document=None) for s in scenarios],  # the parse stays here
        {d: _ShippedFixture.of(Path(d)) for d in sorted(directories)},
        roots,
        keep_workdir,
        proxies,
    )
    runs = [(i, run) for i in range(len(scenarios)) for run in range(max(1, repeat))]
    results = {unit: kept[unit] for unit in runs if unit in kept}

    def accept(unit: tuple[str, int], outcome: _Outcome) -> bool:
        row, handover = outcome
        theirs = proxies[unit[1]]
        if handover is not None and theirs is not None:
            theirs.absorb(scenarios[unit[1]], handover)
        result = ScenarioResult.from_journal(row)
        results[(unit[1], slot_run(unit[0]))] = result
        if on_complete is not None:
            on_complete(unit[1], result)
        return True

    units = [(run_slot(run), index) for index, run in runs if (index, run) not in results]
    await run_units_ray(job, units, settings, accept)
    return ScenarioRunResult.of(
        [results[unit] for unit in runs],
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )


async def run_scenario_matrix_ray(
    matrix: ScenarioMatrix,
    settings: RaySettings,
    *,
    root: Path | str | None = None,
    repeat: int = 1,
    on_variant_complete: Callable[[VariantResult], None] | None = None,
    variants: Sequence[ScenarioVariant] | None = None,
    finished: Finished | None = None,
    on_complete: Callable[[str, ScenarioResult], None] | None = None,
    proxies: Mapping[str, ScenarioProxies] | None = None,
) -> MatrixResult:
    """:func:`~signal_eval_cli.scenarios.matrix.run_scenario_matrix` on Ray: every
    variant's scenarios share the actors (one job, the fixtures shipped once), each
    variant's ``proxies`` (started here) served there as copies."""
    started_at, started = now_iso(), time.perf_counter()
    plans = matrix.plans(variants)
    each = len(matrix.scenarios)
    where = {
        (v.id, s.id): k * each + i for k, (v, ss) in enumerate(plans) for i, s in enumerate(ss)
    }
    kept = {(where[(v, s)], n): r for (v, s, n), r in (finished or {}).items() if (v, s) in where}

    def complete(index: int, result: ScenarioResult) -> None:
        if on_complete is not None:
            on_complete(plans[index // each][0].id, result)

    run = await _run_on_ray(
        [s for _, scenarios in plans for s in scenarios],
        settings,
        root=root,
        keep_workdir=False,
        repeat=repeat,
        kept=kept,
        on_complete=complete,
        proxies=[(proxies or {}).get(v.id) for v, each_run in plans for _ in each_run],
    )
    runs = each * max(1, repeat)  # in the order given: variant by variant
    results = []
    for k, (variant, _) in enumerate(plans):
        part = ScenarioRunResult.of(
            run.scenarios[k * runs : (k + 1) * runs],
            duration_ms=run.duration_ms,
            started_at=run.started_at,
            completed_at=run.completed_at,
        )
        done = variant_result(matrix, variant, part)
        if on_variant_complete is not None:
            on_variant_complete(done)
        results.append(done)
    return matrix_result(matrix, results, started_at, started)
