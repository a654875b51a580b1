"""1,000 cases through the real OpenAI provider against a loopback mock with 100 ms latency.

Each case runs the built-in reactive harness with one agent that makes one chat
call (our HTTP provider over our own HTTP client, our retry/limit wrapper),
then one ``output.contains`` check — the workload of the peer benchmark in
``shared/peer-bench`` (promptfoo 8.0x, Inspect AI 19.9x, bare asyncio 1.06x).
The provider's ``max_connections`` is 100, so the ideal wall time is
1000 / 100 × 100 ms = 1.0 s. The mock (``bench/mock_llm.py``, a copy of the peer
bench's, stdlib only) runs in its own process, as in the peer runs.

Prints the run's details, then ``wall_vs_ideal: <ratio>`` as the last line (the
wall time of ``run_dataset``; process start-up and imports are reported apart).

    python bench/providers.py [--cases 1000] [--max-connections 100] [--latency-ms 100]
                              [--concurrency N] [--floor]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mock_client import bare_floor, mock_stats, start_mock  # noqa: E402

# bench/ itself must not be on the path: bench/html.py would shadow the stdlib's html
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from signal_eval_cli.dataset import EvalCase, EvalDataset  # noqa: E402
from signal_eval_cli.harness.reactive import create_harness  # noqa: E402
from signal_eval_cli.results import DatasetResult  # noqa: E402
from signal_eval_cli.runner import RunOptions, run_dataset  # noqa: E402

IMPORTED = time.perf_counter()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def dataset(cases: int) -> EvalDataset:
    return EvalDataset(
        name="providers-bench",
        cases=[
            EvalCase(
                id=f"case-{i}",
                input={"text": f"Echo item {i} now please thanks"},
                assertions=[{"type": "output.contains", "text": f"ANSWER: Echo item {i} now"}],
            )
            for i in range(cases)
        ],
    )


async def run(port: int, args: argparse.Namespace) -> tuple[DatasetResult, float, float]:
    harness = create_harness(
        [{"id": "echo", "activate_on": ["harness:start"], "prompt": "{input.text}"}],
        provider="openai:mock-model",
        provider_options={
            "base_url": f"http://127.0.0.1:{port}/v1",
            "api_key": "dummy-key",
            "max_connections": args.max_connections,
        },
    )
    data = dataset(args.cases)
    concurrency = args.concurrency or args.max_connections
    options = RunOptions(concurrency=args.cases if concurrency < 0 else concurrency)
    if args.warmup:  # the first call builds the session and its connections
        await run_dataset(harness, dataset(1), RunOptions())
        mock_stats(port, "/__reset", "POST")
    cpu0, began = cpu_seconds(), time.perf_counter()
    result = await run_dataset(harness, data, options)
    return result, time.perf_counter() - began, cpu_seconds() - cpu0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--max-connections", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="cases run at once (default: --max-connections, like the peers' runs; "
        "-1: all cases at once, the limiter alone bounding the calls)",
    )
    parser.add_argument("--no-warmup", dest="warmup", action="store_false")
    parser.add_argument(
        "--floor", action="store_true", help="also time a bare asyncio client (machine load check)"
    )
    args = parser.parse_args()
    os.environ.pop("OPENAI_BASE_URL", None)

    process, port = start_mock(args.latency_ms)
    try:
        result, wall, cpu = asyncio.run(run(port, args))
        stats = mock_stats(port)
        floor = asyncio.run(bare_floor(port, args.cases, args.max_connections)) if args.floor else 0
    finally:
        process.terminate()
        process.wait(10)

    ideal = args.cases / args.max_connections * args.latency_ms / 1000
    passed = sum(1 for c in result.cases if c.passed)
    errors = [c.error for c in result.cases if c.error][:3]
    print(
        f"cases: {args.cases}  max_connections: {args.max_connections}  latency: {args.latency_ms:g} ms"
    )
    print(f"passed: {passed}/{args.cases}" + (f"  first errors: {errors}" if errors else ""))
    print(
        f"mock: completions {stats['completions']}  peak concurrency {stats['peak_concurrency']}  "
        f"connections {stats['total_connections']}  errors {stats['errors']}"
    )
    print(f"startup (interpreter + imports): {IMPORTED - STARTED:.2f} s")
    print(
        f"run wall: {wall:.3f} s  ideal: {ideal:.3f} s  CPU: {cpu:.2f} s ({cpu / args.cases * 1000:.2f} ms/case)"
    )
    if args.floor:
        print(
            f"floor now (bare asyncio client, same calls): {floor:.3f} s = {floor / ideal:.2f}x ideal"
        )
    print(f"process wall so far: {time.perf_counter() - STARTED:.2f} s")
    if passed != args.cases or stats["completions"] != args.cases:
        print("FAILED: not every case passed or the mock saw a different number of calls")
        print(f"wall_vs_ideal: {wall / ideal:.2f}")
        return 1
    print(f"wall_vs_ideal: {wall / ideal:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
