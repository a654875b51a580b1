"""1,000 one-call cases at concurrency 100 against the loopback mock (100 ms), direct
and through the run's model proxy (record, then replay).

Each case's harness POSTs one chat completion with a shared HTTP client, to the mock
directly or to the case's proxy prefix (``ctx.proxy.openai_base_url``). ``--client``
names the clients, each measured in turn: ``signal-eval`` (the package's own, which the
built-in providers and the proxy's upstream use), ``aiohttp`` (the providers' transport
before it; many harnesses' SDKs use it), ``httpx`` (the SDKs' default, whose pool costs
milliseconds of CPU per call at this concurrency). The default measures the first two;
the last lines are the first client's. The mock
(``bench/mock_llm.py``) runs in its own process. Per call we time the request as the
harness sees it. ``proxy_overhead_ms_per_call`` is the CPU time the proxy's thread
spends per recorded call (``ModelProxy.cpu_seconds``, from the moment it listens: on a
shared machine load inflates latency more than work); the mean added latency and the
process CPU of the record run minus the direct run (both measured in this run) are
printed too. Replay runs twice. First as users run it (``timing`` off, the default: each
call is answered from the cassette at once): ``replay_wall_vs_ideal`` divides its wall time by
cases / concurrency × 100 ms, the ideal of the live workload, so a replay that cost more than
the calls it stands for would show above 1. Then with ``timing: true`` (each call waits the
duration recorded for it, which is the mock's 100 ms plus whatever the record run itself was
kept waiting: its queueing at this concurrency, the machine's load): its wall time is printed
over the same ideal and over the recorded durations' own (their sum over the concurrency: what
a perfect replay of this recording takes), the measure of how faithfully the proxy keeps time.

    python bench/proxy.py [--cases 1000] [--concurrency 100] [--latency-ms 100]
                          [--client signal-eval,aiohttp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
from signal_eval_cli.transport.client import Client  # noqa: E402

CLIENTS = ("signal-eval", "aiohttp", "httpx")


def _start_mock() -> Any:
    """``start_mock`` of ``bench/mock_client.py`` (the mock in its own process), loaded by
    path: bench/ is off ``sys.path`` (see above)."""
    spec = importlib.util.spec_from_file_location(
        "bench_mock_client", Path(__file__).with_name("mock_client.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.start_mock


class OneCall:
    def __init__(self, client: Any, direct: str | None) -> None:
        self.client, self.direct = client, direct
        self.latencies: list[float] = []

    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        base = self.direct or ctx.proxy.openai_base_url
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": input}]}
        began = time.perf_counter()
        if isinstance(self.client, Client):
            url = f"{base}/chat/completions"
            response = await self.client.request("POST", url, _HEADERS, json.dumps(body).encode())
            try:
                data = await response.read()
            finally:
                response.release()
            assert response.status == 200, data
            answer = json.loads(data)
        elif isinstance(self.client, httpx.AsyncClient):
            reply = await self.client.post(f"{base}/chat/completions", json=body)
            reply.raise_for_status()
            answer = reply.json()
        else:
            async with self.client.post(f"{base}/chat/completions", json=body) as response:
                response.raise_for_status()
                answer = await response.json()
        self.latencies.append((time.perf_counter() - began) * 1000)
        return [{"name": "text:complete", "payload": {"content": answer["id"]}}]


_HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}


def make_client(kind: str, connections: int) -> Any:
    """The harness's HTTP client (see the module doc), as an async context manager."""
    if kind == "signal-eval":
        return Client(60.0, max_connections=connections)
    if kind == "httpx":
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        return httpx.AsyncClient(limits=limits, timeout=60)
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections))


async def once(
    ds: EvalDataset, concurrency: int, harness: OneCall, proxy: ModelProxy | None
) -> tuple[float, float]:
    """Wall seconds and CPU seconds of this process (the proxy's thread included)."""
    options = RunOptions(concurrency=concurrency, proxy=proxy)
    began, cpu = time.perf_counter(), time.process_time()
    result = await run_dataset(harness, ds, options)
    wall, spent = time.perf_counter() - began, time.process_time() - cpu
    failed = [c.error for c in result.cases if not c.passed]
    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {failed[:3]}")
    return wall, spent


def measure(
    kind: str, args: argparse.Namespace, ds: EvalDataset, mock_url: str
) -> tuple[dict[str, tuple[float, float, float]], dict[str, float], float]:
    """Direct, record, replay and timed replay runs with the harness's client ``kind``: each run's
    (wall, mean call ms, process CPU), the proxy thread's CPU per call (ms), and the
    ideal of the recorded durations (s)."""
    cassette = ProxyCassette(ds.path.parent / f"{kind}.proxy.yaml")  # type: ignore[union-attr]
    upstream = Upstream(f"{mock_url}/v1", mock_url, "sk-bench", "sk-bench")
    figures: dict[str, tuple[float, float, float]] = {}
    proxy_cpu: dict[str, float] = {}

    async def runs() -> None:
        async with make_client(kind, args.concurrency) as client:
            for name in ("direct", "record", "replay", "timed replay"):
                harness = OneCall(client, f"{mock_url}/v1" if name == "direct" else None)
                proxy = None
                if name != "direct":
                    mode, timing = name.split()[-1], name == "timed replay"
                    proxy = ModelProxy(cassette, mode, upstream=upstream, timing=timing).start()  # type: ignore[arg-type]
                try:
                    wall, cpu = await once(ds, args.concurrency, harness, proxy)
                finally:
                    if proxy is not None:
                        proxy.stop()
                        proxy.save()
                        proxy_cpu[name] = proxy.cpu_seconds * 1000 / args.cases
                figures[name] = (wall, statistics.fmean(harness.latencies), cpu)
                print(
                    f"{kind} {name}: wall {wall:.3f} s, mean call {figures[name][1]:.2f} ms, "
                    f"CPU {cpu * 1000 / args.cases:.3f} ms per case"
                    + (f" (proxy thread {proxy_cpu[name]:.3f} ms)" if name in proxy_cpu else ""),
                    flush=True,
                )

    asyncio.run(runs())
    recorded = [i.duration_ms for i in cassette.load()]
    return figures, proxy_cpu, sum(recorded) / 1000 / args.concurrency


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--client", default="signal-eval,aiohttp", help=", ".join(CLIENTS))
    args = parser.parse_args()
    kinds = args.client.split(",")
    if set(kinds) - set(CLIENTS):
        parser.error(f"--client: each one of {', '.join(CLIENTS)}")
    ds = EvalDataset.from_data(
        {"name": "bench", "cases": [{"id": f"c{i}", "input": f"q {i}"} for i in range(args.cases)]},
        Path(tempfile.mkdtemp(prefix="bench-proxy-")) / "bench.yaml",
    )
    mock, port = _start_mock()(args.latency_ms)
    try:
        measured = [measure(kind, args, ds, f"http://127.0.0.1:{port}") for kind in kinds]
    finally:
        mock.terminate()
        mock.wait()
    ideal = args.cases / args.concurrency * args.latency_ms / 1000
    for kind, (figures, proxy_cpu, replay_ideal) in reversed(
        list(zip(kinds, measured, strict=True))
    ):
        latency_added = figures["record"][1] - figures["direct"][1]
        process_added = (figures["record"][2] - figures["direct"][2]) * 1000 / args.cases
        print(f"-- the harness's client: {kind}")
        print(f"ideal wall: {ideal:.3f} s (recorded durations: {replay_ideal:.3f} s)")
        print(
            f"direct wall / ideal (the floor without the proxy): {figures['direct'][0] / ideal:.3f}"
        )
        print(f"record wall / direct wall: {figures['record'][0] / figures['direct'][0]:.3f}")
        timed = figures["timed replay"][0]
        print(f"timed replay wall / ideal: {timed / ideal:.3f}")
        print(f"timed replay wall / ideal of the recorded durations: {timed / replay_ideal:.3f}")
        print(f"proxy latency added per call (mean, ms): {latency_added:.3f}")
        print(f"process CPU added per call (record - direct, ms): {process_added:.3f}")
        print(f"proxy thread CPU per replayed call (ms): {proxy_cpu['replay']:.3f}")
        print(f"replay_wall_vs_ideal: {figures['replay'][0] / ideal:.3f}")
        # what the hop costs: the CPU its thread spends per recorded call (load on a shared
        # machine inflates latencies, not the work done); the other figures are printed above
        print(f"proxy_overhead_ms_per_call: {proxy_cpu['record']:.3f}")


if __name__ == "__main__":
    main()
