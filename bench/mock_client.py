"""The loopback mock of the provider benchmarks (``bench/mock_llm.py``) and a bare client.

Stdlib only, so a bench that drives the CLI as a process imports nothing of signal-eval.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

_COMPILE = (
    "import compileall, os, signal_eval_cli, signal_eval_entry;"
    "compileall.compile_dir(os.path.dirname(signal_eval_cli.__file__), quiet=1);"
    "compileall.compile_file(signal_eval_entry.__file__, quiet=1)"
)


def fresh_bytecode(command: list[str]) -> None:
    """Compile the bytecode of the signal-eval that ``command`` runs, as ``make setup``
    (and a wheel's install) does: an editable checkout changed since (a merge) under
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile its changed modules again at every
    start, and the figure would measure that (30-100 ms a start) instead of the code."""
    first = Path(shutil.which(command[0]) or command[0])
    python = str(first)
    if not first.name.startswith("python"):  # a console script: its interpreter
        line = first.read_bytes().split(b"\n", 1)[0]
        python = line[2:].decode().strip() if line.startswith(b"#!") else sys.executable
    subprocess.run([python, "-c", _COMPILE], check=True)


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
