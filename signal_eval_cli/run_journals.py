"""Each kind of run's journal: the header it starts with, the key and line of each unit it
records, and the results it keeps when resumed.

The header says what the run is (kind, name, every unit id of the whole run in order, the
fingerprint :mod:`~signal_eval_cli.resume` checks before keeping anything, the shard, the
slots of a matrix or of repeats); :mod:`~signal_eval_cli.merging` joins shards by it. One
group of functions per kind of run: a dataset, a matrix, scenarios, a matrix of agents
over scenarios. The commands (``run``, ``matrix``, ``scenario``) call these; so can a
Python user journaling a run of their own (with :func:`~signal_eval_cli.resume.open_journal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.fingerprint import (
    canonical,
    dataset_fingerprint,
    matrix_fingerprint,
    scenario_matrix_fingerprint,
    scenarios_fingerprint,
)
from signal_eval_cli.journal import JournalHeader, Key, run_slot, slot_run
from signal_eval_cli.results import CaseResult
from signal_eval_cli.resume import (
    JournalPlan,
    case_from_entry,
    matrix_slot,
    scenario_from_entry,
    slot_variant_run,
)
from signal_eval_cli.runner import RunOptions, never_ran, select_cases
from signal_eval_cli.sharding import Shard

if TYPE_CHECKING:  # a dataset run imports neither the matrix nor the scenario machinery
    from signal_eval_cli.dataset import EvalDataset
    from signal_eval_cli.matrix import MatrixFile
    from signal_eval_cli.run_config import ProviderPolicy
    from signal_eval_cli.scenarios import Scenario, ScenarioResult
    from signal_eval_cli.scenarios.matrix import ScenarioMatrix

__all__ = [
    "case_entry",
    "dataset_header",
    "kept_cases",
    "kept_matrix_cases",
    "kept_scenario_matrix",
    "kept_scenarios",
    "matrix_header",
    "scenario_entry",
    "scenario_matrix_entry",
    "scenario_matrix_header",
    "scenarios_header",
]


# -- a dataset ----------------------------------------------------------------------------------


def dataset_header(
    dataset: EvalDataset,
    options: RunOptions,
    flags: ProviderPolicy,
    *,
    harness: str | None,
    params: dict[str, Any],
    traces: Path | None,
    journaled: bool = True,
) -> JournalHeader:
    """A dataset run's header: the cases ``options`` select (every shard's), and a
    fingerprint of the dataset, the harness and what changes results (``params``, the
    timeout, repeats, the provider, the judge's model, prices, recorded ``traces``).
    Not ``journaled`` (no results file, or one on a stream: nothing writes or compares a
    fingerprint), it has none: the dataset's hash takes over a second at 100,000 cases."""
    meaning = {
        "params": params,
        "timeout": options.timeout,
        "repeat": options.repeat,
        "provider": flags.provider,
        "judgeModel": flags.judge_model,
        "price": flags.prices,
        "traces": str(traces) if traces else None,
    }
    return JournalHeader(
        "dataset",
        dataset.name,
        [c.id for c in select_cases(dataset, replace(options, shard=None))],
        dataset_fingerprint(dataset, harness, meaning) if journaled else {},
        options.shard,
        dict(dataset.metadata),
    )


def case_entry(result: CaseResult, variant: str = "") -> tuple[Key, dict[str, Any]] | None:
    """A finished case's journal line (of a matrix's ``variant``); ``None`` for a case
    fail-fast kept from starting, which a resumed run must run."""
    if never_ran(result):
        return None
    return (variant, result.case_id), result.to_dict("all")


def kept_cases(plan: JournalPlan, variant: str = "") -> dict[str, CaseResult]:
    """The cases a resumed journal keeps (of a matrix's ``variant``), by id: not run again."""
    return {
        case_id: case_from_entry(case_id, data) for case_id, data in plan.finished(variant).items()
    }


# -- a matrix -----------------------------------------------------------------------------------


def matrix_header(matrix: MatrixFile, options: RunOptions, repeat: int | None) -> JournalHeader:
    """A matrix run's header: the cases ``options`` select (every shard's), the variants
    (their slots), a fingerprint of the dataset, every variant and ``repeat``."""
    return JournalHeader(
        "matrix",
        matrix.name,
        [c.id for c in select_cases(matrix.dataset, replace(options, shard=None))],
        matrix_fingerprint(matrix.dataset, matrix.variants, {"repeat": repeat}),
        options.shard,
        variants=[{"id": v.id, "name": v.name, "metadata": v.metadata} for v in matrix.variants],
    )


def kept_matrix_cases(
    plan: JournalPlan, matrix: MatrixFile, options: RunOptions
) -> dict[str, dict[str, CaseResult]]:
    """Each variant's kept cases, of those ``options`` select (this shard's)."""
    selected = {c.id for c in select_cases(matrix.dataset, options)}
    return {
        v.id: {i: case for i, case in kept_cases(plan, v.id).items() if i in selected}
        for v in matrix.variants
    }


# -- scenarios ----------------------------------------------------------------------------------


def scenarios_header(
    scenarios: Sequence[Scenario], *, root: Path | None, repeat: int, shard: Shard | None
) -> JournalHeader:
    """A scenario run's header: every scenario (every shard's), a slot per run of each
    (``repeat``), a fingerprint of the scenario files, their fixtures and agents."""
    fingerprint = {
        **scenarios_fingerprint(scenarios, root),  # every shard's: they merge
        "params": canonical({"repeat": repeat}),
    }
    return JournalHeader(
        "scenarios",
        "scenarios",
        [s.id for s in scenarios],
        fingerprint,
        shard,
        variants=[{"id": run_slot(run)} for run in range(max(1, repeat))],
    )


def scenario_entry(result: ScenarioResult) -> tuple[Key, dict[str, Any]]:
    """A finished scenario run's journal line (its tags ride along)."""
    return (run_slot(result.run), result.id), result.to_journal()


def kept_scenarios(plan: JournalPlan) -> dict[tuple[str, int], ScenarioResult]:
    """The scenario runs a resumed journal keeps, by (scenario id, run): not run again."""
    return {
        (sid, slot_run(slot)): scenario_from_entry(sid, data)
        for (slot, sid), data in plan.kept.items()
    }


# -- a matrix of agents over scenarios ----------------------------------------------------------


def scenario_matrix_header(
    matrix: ScenarioMatrix, *, repeat: int, shard: Shard | None
) -> JournalHeader:
    """A matrix over scenarios' header: every scenario (every shard's), the variants, a
    fingerprint of the scenarios, their fixtures, every variant and ``repeat``."""
    return JournalHeader(
        "scenario-matrix",
        matrix.name,
        [s.id for s in matrix.scenarios],
        scenario_matrix_fingerprint(matrix, {"repeat": repeat}),  # every shard's: they merge
        shard,
        metadata={"repeat": repeat},
        variants=[
            {"id": v.id, "name": v.name, "metadata": dict(v.metadata)} for v in matrix.variants
        ],
    )


def scenario_matrix_entry(variant: str, result: ScenarioResult) -> tuple[Key, dict[str, Any]]:
    """A variant's finished scenario run's journal line."""
    return (matrix_slot(variant, result.run), result.id), result.to_journal()


def kept_scenario_matrix(plan: JournalPlan) -> dict[tuple[str, str, int], ScenarioResult]:
    """The runs a resumed journal keeps, by (variant, scenario id, run): not run again."""
    kept = {}
    for (slot, sid), data in plan.kept.items():
        variant, run = slot_variant_run(slot)
        kept[(variant, sid, run)] = scenario_from_entry(sid, data)
    return kept
