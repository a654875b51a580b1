"""How long the CLI takes to start: ``signal-eval --help`` and a one-case run.

Each command runs as a child process RUNS times, alternating, with a bare
``python -c pass`` as the baseline in the same run (interpreter start, nothing else):
- ``signal-eval --help``;
- ``signal-eval run datasets/code-review.yaml --case sql-injection -q``: the built-in
  reactive harness replaying its cassette (offline; it starts no model proxy),
  one case, its table and exit code.
Medians of wall and CPU time. Targets: ``--help`` ≤ 0.3 s, a one-case run ≤ 0.8 s.
Last line: ``one_case_vs_python: <ratio of the medians' walls>``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mock_client import fresh_bytecode

ROOT = Path(__file__).resolve().parents[1]
RUNS = 7
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "signal-eval --help": [*CLI, "--help"],
    "run, 1 case": [
        *CLI, "run", str(ROOT / "datasets/code-review.yaml"), "--case", "sql-injection", "-q",
    ],
}  # fmt: skip


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU of one child, started outside the checkout: it runs the installed
    package (or the one PYTHONPATH names, to time another build), not ./signal_eval_cli."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 1), argv
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> int:
    fresh_bytecode(CLI)
    print(f"load {os.getloadavg()[0]:.2f}, {RUNS} runs each, medians")
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(RUNS):
        for name, argv in COMMANDS.items():
            samples[name].append(timed(argv))
    walls = {}
    for name, runs in samples.items():
        walls[name] = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:20} wall {walls[name]:5.3f} s  cpu {cpu:5.3f} s")
    print(f"help_vs_python: {walls['signal-eval --help'] / walls['python -c pass']:.2f}")
    print(f"one_case_vs_python: {walls['run, 1 case'] / walls['python -c pass']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
