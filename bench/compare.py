"""Time loading two 100,000-case result files and comparing them.

The files are what ``save_result`` writes for a realistic run: three assertions per
case, metrics on every case, about 6 % of cases failing independently in each run (so
thousands of regressions and improvements), 1 % of latencies changed. Timed:
:func:`compare_files` (both ``load_result`` calls plus ``compare``), which is what
``signal-eval compare`` runs before printing. Best of RUNS, in a fresh process whose
peak RSS is printed (the files are made in this one, which holds 2 × 100,000 results).
Last line: ``compare_s_per_100k: <seconds>`` (target ≤ 2 s).
"""

from __future__ import annotations

import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.compare import compare_files
from signal_eval_cli.persistence import save_result
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult

CASES = 100_000
RUNS = 2
CHECKS = (
    {"type": "signal.not", "pattern": "error:*"},
    {"type": "output.contains", "text": "injection", "caseSensitive": False},
    {"type": "metric.latency.max", "value": 30000},
)


def make_result(rng: random.Random, flip: float) -> DatasetResult:
    cases = []
    for i in range(CASES):
        passed = rng.random() > 0.06 if rng.random() > flip else rng.random() > 0.5
        checks = [AssertionResult(dict(c), True, "ok", evaluation_ms=0.01) for c in CHECKS]
        if not passed:
            checks[1] = AssertionResult(
                dict(CHECKS[1]),
                False,
                "'injection' not found in output (240 chars): \"The code looks fine…\"",
                expected="injection",
                actual="The code looks fine",
            )
        latency = 2000 + (i % 97) * 31 + (rng.random() * 600 if rng.random() < flip else 0)
        cases.append(
            CaseResult(
                case_id=f"case-{i:06d}",
                name=f"Case number {i}",
                passed=passed,
                assertions=checks,
                metrics=CaseMetrics(latency, 400, 150, 550, 0.004 + (i % 13) * 1e-4, 2),
                duration_ms=latency,
                tags=["bench", "security" if i % 2 else "bugs"],
            )
        )
    return DatasetResult("bench", cases, duration_ms=1.0, started_at="2026-01-10T00:00:00Z")


def peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` on Linux (``ru_maxrss`` survives exec there, so
    a child started by a big parent would report the parent's)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kib) / 1024


def measure(base_path: Path, cand_path: Path) -> None:
    """In the child: time compare_files, print the best time, the result and peak RSS."""
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        comparison = compare_files(base_path, cand_path)
        best = min(best, time.perf_counter() - started)
    print(
        f"regressions: {len(comparison.regressions)}, improvements: "
        f"{len(comparison.improvements)}, verdict: {comparison.summary.verdict}"
    )
    print(f"peak_rss_mb: {peak_rss_mb():.0f}")
    print(f"best_s: {best}")


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        measure(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        base_path, cand_path = Path(tmp) / "base.json", Path(tmp) / "cand.json"
        save_result(make_result(rng, 0.0), base_path)
        save_result(make_result(rng, 0.01), cand_path)
        size_mb = (base_path.stat().st_size + cand_path.stat().st_size) / 1e6
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(base_path), str(cand_path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    print(f"files: 2 × {CASES:,} cases, {size_mb:.0f} MB of JSON")
    print(*child[:-1], sep="\n")
    best = float(child[-1].removeprefix("best_s: "))
    print(f"compare_s_per_100k: {best * 100_000 / CASES:.3f}")


if __name__ == "__main__":
    main()
