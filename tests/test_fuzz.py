"""The hostile-input probe, in the suite: seeded mutants of every file kind through the CLI.

Each mutant must exit 0, 1 or 2, print no traceback and stay under 10 s and 1 GB
(see tests/fuzzing.py). ``bench/fuzz.py`` runs the same mutator over 10,000+ mutants.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fuzzing
import pytest

MUTANTS = 70  # 10 per kind: about 20 s of CPU (bench/fuzz.py runs 10,500)


@pytest.mark.skipif(sys.platform != "linux", reason="forks and reads max RSS the Linux way")
def test_mutants_of_every_file_kind_exit_0_1_or_2_fast_with_no_traceback(tmp_path: Path) -> None:
    kinds: set[str] = set()
    failures = fuzzing.fuzz(
        tmp_path, MUTANTS, seed=11, on_outcome=lambda o: kinds.add(o.mutant.kind)
    )
    assert kinds == set(fuzzing.KINDS)
    report = [
        f"{o.mutant.kind} {' '.join(o.mutant.argv)}: {o.failure}\n{o.stderr[-2000:]}"
        for o in failures
    ]
    assert not report, "\n\n".join(report)
