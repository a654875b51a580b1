"""1,000 cases through the real OpenAI provider against a loopback mock with 100 ms latency.

Each case runs the built-in reactive harness with one agent that makes one chat
call (the official ``openai`` SDK, aiohttp transport, our retry/limit wrapper),
then one ``output.contains`` check — the workload of the peer benchmark in
``shared/peer-bench`` (promptfoo 8.0x, Inspect AI 19.9x, bare asyncio 1.06x).
The provider's ``max_connections`` is 100, so the ideal wall time is
1000 / 100 × 100 ms = 1.0 s. The mock (``bench/mock_llm.py``, a copy of the peer
bench's, stdlib only) runs in its own process, as in the peer runs.

Prints the run's details, then ``wall_vs_ideal: <ratio>`` as the last line (the
wall time of ``run_dataset``; process start-up and imports are reported apart).

    python bench/providers.py [--cases 1000] [--max-connections 100] [--latency-ms 100]
                              [--concurrency N] [--transport aiohttp|httpx] [--floor]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

STARTED = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from signal_eval_cli.dataset import EvalCase, EvalDataset  # noqa: E402
from signal_eval_cli.harness.reactive import create_harness  # noqa: E402
from signal_eval_cli.results import DatasetResult  # noqa: E402
from signal_eval_cli.runner import RunOptions, run_dataset  # noqa: E402

IMPORTED = time.perf_counter()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_mock(latency_ms: float) -> tuple[subprocess.Popen[bytes], int]:
    port_file = Path(tempfile.mkdtemp(prefix="bench-providers-")) / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("mock_llm.py")),
            "--port",
            "0",
            "--latency-ms",
            str(latency_ms),
            "--max-seconds",
            "300",
            "--port-file",
            str(port_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if port_file.is_file() and port_file.read_text().strip():
            return process, int(port_file.read_text())
        time.sleep(0.02)
    process.terminate()
    raise SystemExit("the mock server did not start")


def mock_stats(port: int, path: str = "/__stats", method: str = "GET") -> dict[str, object]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, object] = json.loads(response.read())
        return data


async def bare_floor(port: int, cases: int, connections: int) -> float:
    """Wall time of a bare stdlib asyncio client doing the same calls: the machine's floor now."""
    body = json.dumps(
        {"model": "mock-model", "messages": [{"role": "user", "content": "Echo item 1 now"}]}
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def worker(count: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(count):
            writer.write(head + body)
            headers = await reader.readuntil(b"\r\n\r\n")
            length = int(headers.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        writer.close()

    began = time.perf_counter()
    share, extra = divmod(cases, connections)
    await asyncio.gather(*(worker(share + (i < extra)) for i in range(connections)))
    return time.perf_counter() - began


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
            "transport": args.transport,
        },
    )
    data = dataset(args.cases)
    concurrency = args.concurrency or args.max_connections
    options = RunOptions(concurrency=args.cases if concurrency < 0 else concurrency)
    if args.warmup:  # the first SDK call imports and builds most of the client
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
    parser.add_argument("--transport", choices=["aiohttp", "httpx"], default="aiohttp")
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
