"""The hostile-input probe, in the suite: seeded mutants of every file kind through the CLI.

Each mutant must exit 0, 1 or 2, print no traceback and stay under 10 s and 1 GB
(see tests/fuzzing.py). ``bench/fuzz.py`` runs the same mutator over 10,000+ mutants.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fuzzing
import pytest

MUTANTS = 7 * len(fuzzing.KINDS)  # about 20 s of CPU (bench/fuzz.py runs 10,500)
linux_only = pytest.mark.skipif(
    sys.platform != "linux", reason="forks and reads max RSS the Linux way"
)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, bytes]]]:
    """A seed workspace (built once: it records two runs), and its seeds."""
    tmp = tmp_path_factory.mktemp("fuzz")
    return tmp, fuzzing.seed_workspace(tmp)


@linux_only
def test_mutants_of_every_file_kind_exit_0_1_or_2_fast_with_no_traceback(
    seeded: tuple[Path, dict[str, tuple[str, bytes]]],
) -> None:
    tmp, seeds = seeded
    kinds: set[str] = set()
    failures = fuzzing.run_all(
        tmp, fuzzing.mutants(seeds, MUTANTS, seed=11), on_outcome=lambda o: kinds.add(o.mutant.kind)
    )
    assert kinds == set(fuzzing.KINDS)
    report = [
        f"{o.mutant.kind} {' '.join(o.mutant.argv)}: {o.failure}\n{o.stderr[-2000:]}"
        for o in failures
    ]
    assert not report, "\n\n".join(report)


@linux_only
def test_two_seed_workspaces_draw_the_same_mutants_from_the_same_seed(
    seeded: tuple[Path, dict[str, tuple[str, bytes]]], tmp_path: Path
) -> None:
    # The seed result files come from real runs: their timings and the per-process part
    # of their signal ids (and so every mutant drawn from their bytes) differed from one
    # workspace to the next. The second workspace is built by another interpreter.
    build = f"import fuzzing, pathlib; fuzzing.build_workspace(pathlib.Path({str(tmp_path)!r}))"
    subprocess.run([sys.executable, "-c", build], cwd=Path(__file__).parent, check=True)
    seeds = seeded[1]
    again = {kind: (name, (tmp_path / name).read_bytes()) for kind, (name, _) in seeds.items()}
    differing = [kind for kind in fuzzing.KINDS if seeds[kind] != again[kind]]
    assert not differing, f"seed files differ: {differing}"
    first, second = (list(fuzzing.mutants(s, 140, seed=7)) for s in (seeds, again))
    assert len(first) == 140
    assert first == second


def test_a_kept_mutant_loads_back_as_it_was(tmp_path: Path) -> None:
    mutant = fuzzing.Mutant("result", "current.json", b'{"x": NaN}\xff', ["compare", "a"], 41)
    outcome = fuzzing.Outcome(mutant, None, 10.2, 5 << 20, "stuck\n", cpu_seconds=0.3)
    fuzzing.save(outcome, tmp_path / "kept")
    assert fuzzing.load(tmp_path / "kept") == mutant
    assert (tmp_path / "kept" / "current.json").read_bytes() == mutant.content
    assert (tmp_path / "kept" / "stderr.txt").read_text() == "stuck\n"
    facts = json.loads((tmp_path / "kept" / "outcome.json").read_text())
    assert facts["failure"] == "took longer than 10 s"
    assert (facts["seconds"], facts["cpuSeconds"], facts["exitCode"]) == (10.2, 0.3, None)


@linux_only
def test_a_mutant_that_hangs_is_killed_at_its_budget(tmp_path: Path) -> None:
    # Time spent waiting for a CPU is not counted against the budget: sleeping is.
    ran = fuzzing.fork_cli(tmp_path, ["--help"], None, timeout=0.5, prepare=lambda: time.sleep(60))
    assert ran.exit_code is None
    assert ran.seconds < 30
    assert ran.waited_for_cpu < 0.5


def _spin(seconds: float, spinning: Any = None) -> None:
    """Compute for ``seconds`` of CPU time, on CPU 0 only (``spinning`` is released once
    this process is there)."""
    os.sched_setaffinity(0, {0})
    if spinning is not None:
        spinning.release()
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


@linux_only
def test_time_a_busy_machine_keeps_a_mutant_waiting_is_not_counted_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes computing on the mutant's only CPU keep it waiting 2/3 of the time or
    # more: 0.4 s of CPU takes over 1.2 s, past a 1 s budget, of which 0.4 s is its own.
    monkeypatch.setattr(fuzzing, "LOADED_LIMIT", 1000)  # whatever else the machine runs
    fork = multiprocessing.get_context("fork")
    spinning = fork.Semaphore(0)
    rivals = [fork.Process(target=_spin, args=(60, spinning)) for _ in "ab"]
    for rival in rivals:
        rival.start()
    try:
        # Both compete for CPU 0 before the mutant starts: a busy machine is slow to start
        # them, and a mutant running alone would finish inside its budget.
        for _ in rivals:
            assert spinning.acquire(timeout=120)

        def compute_then_exit() -> None:
            _spin(0.4)
            os._exit(3)

        ran = fuzzing.fork_cli(tmp_path, ["--help"], None, timeout=1.0, prepare=compute_then_exit)
    finally:
        for rival in rivals:
            rival.kill()
            rival.join()
    assert ran.exit_code == 3, (
        f"killed after {ran.seconds:.1f} s, {ran.waited_for_cpu:.1f} s waiting"
    )
    assert ran.seconds > 1.0
    assert ran.seconds - ran.waited_for_cpu < 1.0
