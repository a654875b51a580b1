"""The whole CLI, end to end: ``signal-eval run`` as a process on N one-call cases.

The peer benchmark's workload (``shared/peer-bench``): case i asks the built-in reactive
harness's one agent to echo ``Echo item i now please thanks`` in one chat call through
``--provider openai:mock-model`` against the loopback mock (``bench/mock_llm.py``, 100 ms
per call), and checks the answer with ``output.contains``. The run is
``signal-eval run data.yaml --provider openai:mock-model --concurrency C
--max-connections C -q -o out.json``: process start, imports, loading the dataset,
building the provider, the calls, the table and the results file all count, because
the user waits for all of them. The ideal is N / C × 100 ms.

For each size it prints the median wall time over the runs, the CPU of the CLI process
per case, and ``e2e_wall_vs_ideal: <ratio>``; a bare asyncio client doing the same
calls in the same run (``--floor``, on by default) shows what the machine allows now.
Targets: ≤ 1.5 and ≤ 0.5 ms CPU per case.

    python bench/e2e.py [--sizes 1000:100,5000:200] [--runs 3] [--cli 'python -m ...']
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mock_client import bare_floor, fresh_bytecode, mock_stats, start_mock

LATENCY_MS = 100.0


def prompt(i: int) -> str:
    return f"Echo item {i} now please thanks"


def dataset_yaml(n: int) -> str:
    """The peer benchmark's signal-eval dataset (``peers/gen_workload.py``)."""
    lines = [
        "name: peer-bench",
        "harness:",
        "  factory: reactive",
        "  params:",
        "    agents:",
        "      - id: echo",
        "        activate_on: [harness:start]",
        "        prompt: '{input.text}'",
        "cases:",
    ]
    for i in range(n):
        lines += [
            f"  - id: case-{i}",
            f"    input: {{text: {json.dumps(prompt(i))}}}",
            "    assertions:",
            f"      - {{type: output.contains, text: {json.dumps(f'ANSWER: Echo item {i} now')}}}",
        ]
    return "\n".join(lines) + "\n"


def load() -> str:
    return "load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(cli: list[str], work: Path, n: int, conc: int, port: int) -> tuple[float, float]:
    """Wall and CPU seconds of one CLI run; exits if it did not pass all N cases."""
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "dummy-key",
        "NO_COLOR": "1",
    }
    out = work / "out.json"
    args = [*cli, "run", f"se_{n}.yaml", "--provider", "openai:mock-model"]
    args += ["--concurrency", str(conc), "--max-connections", str(conc), "-q", "-o", str(out)]
    cpu0, began = children_cpu(), time.perf_counter()
    done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - began, children_cpu() - cpu0
    passed = json.loads(out.read_text())["passedCases"] if out.is_file() else 0
    if done.returncode != 0 or passed != n:
        sys.exit(f"the run failed (exit {done.returncode}, {passed}/{n} passed):\n{done.stderr}")
    return wall, cpu


def measure(cli: list[str], work: Path, n: int, conc: int, runs: int, floor: bool) -> float:
    (work / f"se_{n}.yaml").write_text(dataset_yaml(n))
    ideal = n / conc * LATENCY_MS / 1000
    walls, cpus, floors = [], [], []
    for _ in range(runs):  # a fresh mock per run, as in the peer runs
        process, port = start_mock(LATENCY_MS)
        try:
            wall, cpu = run_cli(cli, work, n, conc, port)
            completions = mock_stats(port)["completions"]
            if completions != n:
                sys.exit(f"the mock saw {completions} calls, not {n}")
            if floor:
                floors.append(asyncio.run(bare_floor(port, n, conc)))
        finally:
            process.terminate()
            process.wait(10)
        walls.append(wall)
        cpus.append(cpu)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    runs_text = ", ".join(f"{w:.2f}" for w in walls)
    print(f"N={n} C={conc}: wall {wall:.2f} s (runs {runs_text})  ideal {ideal:.2f} s")
    print(f"  CPU of the CLI: {cpu:.2f} s = {cpu / n * 1000:.3f} ms/case")
    if floors:
        print(f"  floor now (bare asyncio client): {statistics.median(floors) / ideal:.2f}x ideal")
    print(f"e2e_wall_vs_ideal: {wall / ideal:.2f}  (N={n} C={conc})")
    return wall / ideal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000:100,5000:200", help="N:C pairs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-floor", dest="floor", action="store_false")
    parser.add_argument(
        "--cli",
        default=str(Path(sys.executable).with_name("signal-eval")),
        help="the command to measure (default: this venv's signal-eval)",
    )
    args = parser.parse_args()
    os.environ.pop("OPENAI_BASE_URL", None)
    fresh_bytecode(shlex.split(args.cli))
    print(load())
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        for size in args.sizes.split(","):
            n, conc = (int(part) for part in size.split(":"))
            measure(shlex.split(args.cli), Path(tmp), n, conc, args.runs, args.floor)
    print(load())


if __name__ == "__main__":
    main()
