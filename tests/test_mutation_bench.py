"""bench/mutation.py stays in step with the engine it mutates: a module moved or added in
``assertions/`` is in its TARGETS (else the bench refuses to run), and every reviewed
equivalent mutant still names a mutant the bench draws (else it is scored again, unreviewed).
Both broke once when the registry was split (issue 12) and only the bench itself noticed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_bench", ROOT / "bench/mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_every_engine_module_with_mutation_sites_is_a_target(bench: ModuleType) -> None:
    assert bench.unlisted_targets() == []
    assert all((ROOT / target).is_file() for target in bench.TARGETS)
    assert all((ROOT / test).is_file() for test in bench.TESTS)


def test_every_reviewed_equivalent_mutant_is_still_drawn(bench: ModuleType) -> None:
    population = [m for path in bench.TARGETS for m in bench.mutants_of(path)]
    reviewed = bench.reviewed_equivalents()
    assert reviewed, "bench/equivalent_mutants.txt lists nothing"
    assert bench.stale_equivalents(population, reviewed) == []
