"""The hostile-input probe at scale: 10,000+ seeded mutants of every input file kind.

Each mutant (a dataset in YAML or JSON, scenario, matrix, agents file, cassette, signal
trace, result file, or a trace of the Agents SDK, OTLP or LangGraph, mutated structurally
or byte-wise) goes through the CLI command that reads it, in a
forked child with a 10 s / 1 GB budget (see tests/fuzzing.py): every command is
imported once, each fork calls the CLI's ``main`` from that fresh state, and each
mutant starts from the seed files. A mutant fails when it exits with anything but 0/1/2, prints a
traceback or passes its budget (10 s of its own time: wall time less the time the shared
machine kept it waiting for a CPU; the exits line counts the mutants over 10 s of wall time). Workers run slices of the mutants in parallel;
failures are printed as they come, progress goes to stderr.

The same MUTANTS, WORKERS and SEED draw the same mutants on every machine (the seed
result files are recorded with stopped clocks). Every failing mutant, and the slowest
ones, are kept in ``--keep DIR/seed-SEED/`` (file, argv, exit, seconds, stderr: see
``fuzzing.save``); ``--replay DIR`` runs kept mutants again, one by one, to tell a
loaded machine from a slow mutant and to turn a failure into a regression test.

Prints the slowest mutants, then ``fuzz_failures: <n>`` last (target 0).

Run: .venv/bin/python bench/fuzz.py [MUTANTS] [WORKERS] [SEED] [--keep DIR]
     .venv/bin/python bench/fuzz.py --replay DIR
"""

from __future__ import annotations

import argparse
import heapq
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# bench/ holds html.py and ray.py: keep it off sys.path, or they shadow the real modules.
sys.path[0] = str(Path(__file__).resolve().parent.parent / "tests")

import fuzzing  # noqa: E402

SLOWEST = 10  # mutants kept and shown for their time
OVER = "over the budget in wall time"  # counted beside the exit codes

Timing = tuple[float, float, float, str]  # own seconds, wall, CPU, the mutant and where it is kept


def _own(outcome: fuzzing.Outcome) -> float:
    """The seconds a mutant took, less those it waited for a CPU (what its budget counts)."""
    return outcome.seconds - outcome.waited_for_cpu


def _describe(outcome: fuzzing.Outcome) -> str:
    mutant = outcome.mutant
    tail = outcome.stderr.strip().splitlines()[-1:] or [""]
    verdict = outcome.failure or f"exit {outcome.exit_code}"
    return (
        f"{mutant.kind} #{mutant.index} {' '.join(mutant.argv)}: {verdict} "
        f"({outcome.seconds:.1f} s, {outcome.cpu_seconds:.1f} s CPU, "
        f"{outcome.waited_for_cpu:.1f} s waiting for a CPU): {tail[0][:200]}"
    )


def _slice(count: int, seed: int, keep: Path) -> tuple[list[str], dict[str, int], list[Timing]]:
    """Run ``count`` mutants from ``seed``: (failure descriptions, exits per code, the
    slowest timings); failing and slowest mutants are saved under ``keep``."""
    codes: Counter[str] = Counter()
    failures: list[str] = []
    slowest: list[tuple[float, int, fuzzing.Outcome]] = []  # a min-heap of the slowest

    def seen(outcome: fuzzing.Outcome) -> None:
        codes[str(outcome.exit_code)] += 1
        done = sum(n for code, n in codes.items() if code != OVER)
        if done % 500 == 0:
            print(f"  worker {seed}: {done}/{count}", file=sys.stderr, flush=True)
        if outcome.seconds > fuzzing.TIME_BUDGET:
            codes[OVER] += 1
        heapq.heappush(slowest, (_own(outcome), outcome.mutant.index, outcome))
        if len(slowest) > SLOWEST:
            heapq.heappop(slowest)
        if outcome.failure:
            fuzzing.save(outcome, keep / f"{seed}-{outcome.mutant.index}")
            line = _describe(outcome)
            print(line, flush=True)
            failures.append(line)

    with tempfile.TemporaryDirectory(prefix="signal-eval-fuzz-") as tmp:
        fuzzing.fuzz(Path(tmp), count, seed, on_outcome=seen)
    timings = []
    for own, index, outcome in slowest:
        where = keep / "slowest" / f"{seed}-{index}"
        fuzzing.save(outcome, where)
        timings.append(
            (own, outcome.seconds, outcome.cpu_seconds, f"{where}: {_describe(outcome)}")
        )
    return failures, dict(codes), timings


def fuzz(total: int, workers: int, seed: int, keep_root: Path) -> None:
    keep = keep_root / f"seed-{seed}"
    shutil.rmtree(keep, ignore_errors=True)  # the same seed draws the same mutants again
    per = -(-total // workers)
    started = time.monotonic()
    codes: Counter[str] = Counter()
    failures: list[str] = []
    timings: list[Timing] = []
    with ProcessPoolExecutor(workers) as pool:
        slices = [pool.submit(_slice, per, seed * 1000 + i, keep) for i in range(workers)]
        for future in slices:
            failed, exits, slowest = future.result()
            failures += failed
            codes.update(exits)
            timings += slowest
    seconds = time.monotonic() - started
    ran = per * workers
    print(
        f"slowest mutants (own s = wall less waiting for a CPU; wall s; CPU s), in {keep}/slowest:"
    )
    for own, wall, cpu, line in sorted(timings, reverse=True)[:SLOWEST]:
        print(f"  {own:5.1f} {wall:5.1f} {cpu:5.1f}  {line}")
    if failures:
        print(f"failing mutants kept in {keep} (replay: bench/fuzz.py --replay {keep})")
    over = codes.pop(OVER, 0)
    print(
        f"mutants: {ran} in {seconds:.0f} s ({ran / seconds:.1f}/s); exits: {dict(codes)}; "
        f"over {fuzzing.TIME_BUDGET:.0f} s of wall time: {over}"
    )
    print(f"fuzz_failures: {len(failures)}")


def replay(where: Path) -> None:
    """Run every mutant kept under ``where`` (one kept mutant, or a tree of them) again."""
    kept = sorted(path.parent for path in where.rglob("outcome.json"))
    if not kept:
        sys.exit(f"no kept mutant (outcome.json) under {where}")
    failures = 0

    def seen(outcome: fuzzing.Outcome) -> None:
        nonlocal failures
        failures += bool(outcome.failure)
        print(f"{kept[outcome.mutant.index]}: {_describe(outcome)}", flush=True)

    loaded = [fuzzing.load(path) for path in kept]
    for i, mutant in enumerate(loaded):
        mutant.index = i  # its place in this replay, to name it back
    with tempfile.TemporaryDirectory(prefix="signal-eval-fuzz-") as tmp:
        fuzzing.seed_workspace(Path(tmp))
        fuzzing.run_all(Path(tmp), loaded, on_outcome=seen)
    print(f"fuzz_failures: {failures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mutants", nargs="?", type=int, default=10_500)
    parser.add_argument("workers", nargs="?", type=int, default=2)
    parser.add_argument("seed", nargs="?", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=Path("fuzz-failures"), metavar="DIR")
    parser.add_argument("--replay", type=Path, metavar="DIR", help="run kept mutants again")
    args = parser.parse_args()
    if args.replay is not None:
        replay(args.replay)
    else:
        fuzz(args.mutants, args.workers, args.seed, args.keep.resolve())


if __name__ == "__main__":
    main()
