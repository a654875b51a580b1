"""The hostile-input probe at scale: 10,000+ seeded mutants of every input file kind.

Each mutant (a dataset, scenario, matrix, agents file, cassette, trace or result file,
mutated structurally or byte-wise) goes through the CLI command that reads it, in a
forked child with a 10 s / 1 GB budget (see tests/fuzzing.py): every command is
imported once, each fork calls the CLI's ``main`` from that fresh state, and each
mutant starts from the seed files. A mutant fails when it exits with anything but 0/1/2, prints a
traceback or passes its budget. Workers run slices of the mutants in parallel;
failures are printed as they come, progress goes to stderr.

Prints ``fuzz_failures: <n>`` last (target 0).

Run: .venv/bin/python bench/fuzz.py [MUTANTS] [WORKERS] [SEED]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# bench/ holds html.py and ray.py: keep it off sys.path, or they shadow the real modules.
sys.path[0] = str(Path(__file__).resolve().parent.parent / "tests")

import fuzzing  # noqa: E402


def _slice(count: int, seed: int) -> tuple[int, list[str], dict[str, int]]:
    """Run ``count`` mutants from ``seed``: (ran, failure descriptions, exits per code)."""
    codes: Counter[str] = Counter()
    failures: list[str] = []

    def seen(outcome: fuzzing.Outcome) -> None:
        codes[str(outcome.exit_code)] += 1
        done = sum(codes.values())
        if done % 500 == 0:
            print(f"  worker {seed}: {done}/{count}", file=sys.stderr, flush=True)
        if outcome.failure:
            tail = outcome.stderr.strip().splitlines()[-1:] or [""]
            line = f"{outcome.mutant.kind} {' '.join(outcome.mutant.argv)}: {outcome.failure}: {tail[0][:200]}"
            print(line, flush=True)
            failures.append(line)

    with tempfile.TemporaryDirectory(prefix="signal-eval-fuzz-") as tmp:
        fuzzing.fuzz(Path(tmp), count, seed, on_outcome=seen)
    return count, failures, dict(codes)


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10_500
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    per = -(-total // workers)
    started = time.monotonic()
    codes: Counter[str] = Counter()
    failures: list[str] = []
    ran = 0
    with ProcessPoolExecutor(workers) as pool:
        slices = [pool.submit(_slice, per, seed * 1000 + i) for i in range(workers)]
        for future in slices:
            n, failed, exits = future.result()
            ran += n
            failures += failed
            codes.update(exits)
    seconds = time.monotonic() - started
    print(f"mutants: {ran} in {seconds:.0f} s ({ran / seconds:.1f}/s); exits: {dict(codes)}")
    print(f"fuzz_failures: {len(failures)}")


if __name__ == "__main__":
    main()
