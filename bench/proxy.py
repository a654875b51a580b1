"""1,000 one-call cases at concurrency 100 against the loopback mock (100 ms), direct
and through the run's model proxy (record, then replay).

Each case's harness POSTs one chat completion with a shared ``httpx.AsyncClient``:
to the mock directly, or to the case's proxy prefix (``ctx.proxy.openai_base_url``).
The mock (``bench/mock_llm.py``) runs in its own process. Per call we time the
request as the harness sees it; ``proxy_overhead_ms_per_call`` is the mean added
latency of a recorded call through the proxy over a direct one (both measured in
this run). Replay runs with ``timing: true`` (each call waits its recorded
duration), so its ideal wall time is cases / concurrency × 100 ms.

    python bench/proxy.py [--cases 1000] [--concurrency 100] [--latency-ms 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/ itself must not be on the path: bench/html.py would shadow the stdlib's html
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import importlib.util  # noqa: E402

import httpx  # noqa: E402

from signal_eval_cli.dataset import EvalDataset  # noqa: E402
from signal_eval_cli.proxy.cassette import ProxyCassette  # noqa: E402
from signal_eval_cli.proxy.server import ModelProxy, Upstream  # noqa: E402
from signal_eval_cli.runner import RunOptions, run_dataset  # noqa: E402


def _start_mock() -> Any:
    """``start_mock`` of ``bench/providers.py`` (the mock in its own process)."""
    spec = importlib.util.spec_from_file_location(
        "bench_providers", Path(__file__).with_name("providers.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.start_mock


class OneCall:
    def __init__(self, client: httpx.AsyncClient, direct: str | None) -> None:
        self.client, self.direct = client, direct
        self.latencies: list[float] = []

    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        base = self.direct or ctx.proxy.openai_base_url
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": input}]}
        began = time.perf_counter()
        reply = await self.client.post(f"{base}/chat/completions", json=body)
        self.latencies.append((time.perf_counter() - began) * 1000)
        reply.raise_for_status()
        return [{"name": "text:complete", "payload": {"content": reply.json()["id"]}}]


async def once(
    ds: EvalDataset, concurrency: int, harness: OneCall, proxy: ModelProxy | None
) -> float:
    options = RunOptions(concurrency=concurrency, proxy=proxy)
    began = time.perf_counter()
    result = await run_dataset(harness, ds, options)
    wall = time.perf_counter() - began
    failed = [c.error for c in result.cases if not c.passed]
    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {failed[:3]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    args = parser.parse_args()
    ds = EvalDataset.from_data(
        {"name": "bench", "cases": [{"id": f"c{i}", "input": f"q {i}"} for i in range(args.cases)]},
        Path(tempfile.mkdtemp(prefix="bench-proxy-")) / "bench.yaml",
    )
    cassette = ProxyCassette(ds.path.parent / "bench.proxy.yaml")  # type: ignore[union-attr]
    mock, port = _start_mock()(args.latency_ms)
    mock_url = f"http://127.0.0.1:{port}"
    upstream = Upstream(f"{mock_url}/v1", mock_url, "sk-bench", "sk-bench")
    limits = httpx.Limits(
        max_connections=args.concurrency, max_keepalive_connections=args.concurrency
    )
    figures: dict[str, tuple[float, float]] = {}
    try:

        async def measure() -> None:
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                for name in ("direct", "record", "replay"):
                    harness = OneCall(client, f"{mock_url}/v1" if name == "direct" else None)
                    proxy = None
                    if name != "direct":
                        proxy = ModelProxy(cassette, name, upstream=upstream, timing=True).start()  # type: ignore[arg-type]
                    try:
                        wall = await once(ds, args.concurrency, harness, proxy)
                    finally:
                        if proxy is not None:
                            proxy.stop()
                            proxy.save()
                    figures[name] = (wall, statistics.fmean(harness.latencies))
                    print(
                        f"{name}: wall {wall:.3f} s, mean call {figures[name][1]:.2f} ms",
                        flush=True,
                    )

        asyncio.run(measure())
    finally:
        mock.terminate()
        mock.wait()
    ideal = args.cases / args.concurrency * args.latency_ms / 1000
    print(f"ideal wall: {ideal:.3f} s")
    print(f"record wall / direct wall: {figures['record'][0] / figures['direct'][0]:.3f}")
    print(f"replay_wall_vs_ideal: {figures['replay'][0] / ideal:.3f}")
    print(f"proxy_overhead_ms_per_call: {figures['record'][1] - figures['direct'][1]:.3f}")


if __name__ == "__main__":
    main()
