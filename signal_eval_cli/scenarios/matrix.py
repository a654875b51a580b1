"""A matrix over scenarios: the variants are agents, the cases are scenarios.

::

    scenarios: [scenarios/fix-*.yaml]          # relative to the matrix file; globs
    variants:
      - {id: saved, name: Saved patch, agent: {command: ["{python}", "apply_saved.py"]}}
      - {id: cli, name: CLI agent, agent: {command: [my-agent, --yes]}, env: {MODEL: small}}
      - {id: warm, name: Warmer, params: {temperature: 0.7}}   # over each scenario's harness agent

Each variant runs every scenario (``--repeat`` times) with its ``agent`` in place of the
scenario's own, ``params`` merged over a harness agent's params and ``env`` over a
command agent's env. The results rank like any matrix (resolved rate, cost, p50 time),
so the Pareto frontier and the recommendation work on coding agents. Each variant's
model calls go through its own proxies (:func:`variant_proxies`): their recordings never meet.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.loading import Document, validate_document
from signal_eval_cli.matrix_model import MatrixResult, VariantResult
from signal_eval_cli.matrix_run import variant_cassette
from signal_eval_cli.providers.pricing import PriceTable
from signal_eval_cli.scenarios.model import AgentSpec, Scenario, find_scenarios
from signal_eval_cli.scenarios.proxying import ScenarioProxies
from signal_eval_cli.scenarios.runner import ScenarioResult, ScenarioRunResult, run_scenarios
from signal_eval_cli.signals import now_iso

__all__ = [
    "Finished",
    "ScenarioMatrix",
    "ScenarioVariant",
    "is_scenario_matrix",
    "matrix_result",
    "run_scenario_matrix",
    "scenario_matrix_from_document",
    "variant_proxies",
    "variant_result",
]


def is_scenario_matrix(data: Any) -> bool:
    return isinstance(data, Mapping) and "scenarios" in data


@dataclass(frozen=True, slots=True)
class ScenarioVariant:
    id: str
    name: str
    agent: AgentSpec | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` as this variant runs it; raises InputError when it has no agent."""
        agent = self.agent or scenario.agent
        if agent is None:
            raise InputError(
                f"variant '{self.id}' names no agent and scenario '{scenario.id}' has none"
            )
        agent = dataclasses.replace(
            agent, params={**agent.params, **self.params}, env={**agent.env, **self.env}
        )
        return dataclasses.replace(scenario, agent=agent)


@dataclass(slots=True)
class ScenarioMatrix:
    name: str
    scenarios: list[Scenario]
    variants: list[ScenarioVariant]
    path: Path | None = None

    def plans(
        self, variants: Sequence[ScenarioVariant] | None = None
    ) -> list[tuple[ScenarioVariant, list[Scenario]]]:
        """Each variant with the scenarios as it runs them (InputError before any runs)."""
        chosen = list(variants if variants is not None else self.variants)
        return [(v, [v.apply(s) for s in self.scenarios]) for v in chosen]


def variant_proxies(
    matrix: ScenarioMatrix, mode: str = "auto", *, prices: PriceTable | None = None
) -> dict[str, ScenarioProxies]:
    """Each variant's model proxies (not started), on its own cassette beside the matrix
    file, ``cassettes/<stem>.<variant id>.proxy.yaml``."""
    path = matrix.path or Path("matrix.yaml")
    return {
        v.id: ScenarioProxies(mode, prices=prices, cassette=variant_cassette(path, v.id).path)
        for v in matrix.variants
    }


def _scenario_paths(doc: Document, base: Path) -> list[str]:
    paths: list[str] = []
    problems = []
    for i, pattern in enumerate(doc.data["scenarios"]):
        found = sorted(str(p) for p in base.glob(pattern)) if pattern else []
        if not found:
            problems.append(doc.problem(("scenarios", i), f"no scenario file matches {pattern!r}"))
        paths += found
    if problems:
        raise InputError(problems)
    return paths


def scenario_matrix_from_document(doc: Document) -> ScenarioMatrix:
    """Validate a scenario matrix and load its scenarios (all problems raised together)."""
    problems = validate_document(doc, "matrix")
    if problems:
        raise InputError(problems)
    data = doc.data
    ids = [v["id"] for v in data["variants"]]
    duplicates = [
        doc.problem(("variants", i, "id"), f"duplicate variant id '{v}'")
        for i, v in enumerate(ids)
        if v in ids[:i]
    ]
    if duplicates:
        raise InputError(duplicates)
    base = Path(doc.path).parent
    paths = _scenario_paths(doc, base)
    scenarios = find_scenarios(paths, directory=base)
    variants = [
        ScenarioVariant(
            id=v["id"],
            name=v.get("name", v["id"]),
            agent=AgentSpec.from_data(v["agent"]) if v.get("agent") else None,
            params=dict(v.get("params") or {}),
            env=dict(v.get("env") or {}),
            metadata=dict(v.get("metadata") or {}),
        )
        for v in data["variants"]
    ]
    bare = next((s for s in scenarios if s.agent is None), None)
    missing = [
        doc.problem(
            ("variants", i, "id"),
            f"variant '{v.id}' names no agent and scenario '{bare.id}' has none: "
            "add 'agent: {command: [...]}' to the variant",
        )
        for i, v in enumerate(variants)
        if v.agent is None and bare is not None
    ]
    if missing:
        raise InputError(missing)
    return ScenarioMatrix(
        name=str(data.get("name") or base.name or "scenarios"),
        scenarios=scenarios,
        variants=variants,
        path=Path(doc.path),
    )


def variant_result(
    matrix: ScenarioMatrix, variant: ScenarioVariant, run: ScenarioRunResult
) -> VariantResult:
    """A variant's scenario runs as a matrix variant's result (named after the matrix, as
    one built from the journal is)."""
    run.name = matrix.name
    return VariantResult(variant.id, variant.name, run.to_dataset_result(), dict(variant.metadata))


def matrix_result(
    matrix: ScenarioMatrix, variants: list[VariantResult], started_at: str, started: float
) -> MatrixResult:
    return MatrixResult.of(
        matrix.name,
        variants,
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )


Finished = Mapping[tuple[str, str, int], ScenarioResult]
"""Scenario runs kept from a journal, by (variant id, scenario id, run)."""


async def run_scenario_matrix(
    matrix: ScenarioMatrix,
    *,
    root: Path | str | None = None,
    concurrency: int = 1,
    repeat: int = 1,
    on_variant_complete: Callable[[VariantResult], None] | None = None,
    variants: Sequence[ScenarioVariant] | None = None,
    finished: Finished | None = None,
    on_complete: Callable[[str, ScenarioResult], None] | None = None,
    proxies: Mapping[str, ScenarioProxies] | None = None,
) -> MatrixResult:
    """Every variant over every scenario, one variant after the other. A run in
    ``finished`` is kept, not run again; ``on_complete`` gets (variant id, result) of
    every run that ran; ``proxies`` (started, by variant id) carry each variant's calls."""
    started_at, started = now_iso(), time.perf_counter()
    results = []
    for variant, scenarios in matrix.plans(variants):
        run = await run_scenarios(
            scenarios,
            root=root,
            concurrency=concurrency,
            repeat=repeat,
            finished={(s, n): r for (v, s, n), r in (finished or {}).items() if v == variant.id},
            on_complete=functools.partial(on_complete, variant.id) if on_complete else None,
            proxies=(proxies or {}).get(variant.id),
        )
        done = variant_result(matrix, variant, run)
        if on_variant_complete is not None:
            on_variant_complete(done)
        results.append(done)
    return matrix_result(matrix, results, started_at, started)
