"""Import a 100,000-span OTLP/JSON trace into a Trace, against ``json.loads`` of it.

The file is what an OpenTelemetry-instrumented agent exports for a long run: per turn an
``invoke_agent`` span, a ``chat`` span (model, token usage, output messages with two
tool calls) and two ``execute_tool`` spans (arguments, result; one in ten failed),
plus a few spans with no GenAI operation, all with the usual resource and server
attributes as OTLP ``AnyValue``s, hex ids and int64 times as strings.

Timed (best of RUNS, in CPU time: both are single-threaded, and on a shared machine the
wall clock measures the neighbours too; the wall-clock ratio is printed as well):
``import_trace(path)`` — reading, parsing, mapping, indexing —
and ``json.loads`` of the same text (the floor any importer pays). Both parse with Python's
cyclic collector on, as a program does by default; the import pauses it only while it maps
the parsed document (mapping makes no cycles). Memory: the peak
``tracemalloc`` sees during the import ÷ what the parsed JSON alone holds.
Last line: ``import_vs_json_loads: <ratio>`` (target ≤ 3; memory target ≤ 2).
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path[0] = str(
    Path(__file__).resolve().parents[1]
)  # not bench/: its html.py would shadow the stdlib

from signal_eval_cli.traces import import_trace  # noqa: E402
from signal_eval_cli.traces.otlp_encode import any_value  # noqa: E402

SPANS = 100_000
RUNS = 3


def _attrs(**values: Any) -> list[dict[str, Any]]:
    return [{"key": k.replace("__", "."), "value": any_value(v)} for k, v in values.items()]


def make_request(spans: int) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    now = 1_700_000_000_000_000_000
    common = {"server__address": "api.example.com", "server__port": 443, "gen_ai__system": "openai"}

    def span(span_id: int, parent: int | None, name: str, start: int, **attrs: Any) -> None:
        item: dict[str, Any] = {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": f"{span_id:016x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(now + start * 1000),
            "endTimeUnixNano": str(now + start * 1000 + 900),
            "attributes": _attrs(**common, **attrs),
            "status": {"code": 2, "message": "tool failed"} if attrs.pop("_failed", False) else {},
        }
        if parent is not None:
            item["parentSpanId"] = f"{parent:016x}"
        out.append(item)

    span(
        1,
        None,
        "invoke_agent root",
        0,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="root",
    )
    turn = 0
    while len(out) < spans:
        base = 10 + turn * 10
        agent = base
        span(
            agent,
            1,
            "invoke_agent worker",
            base,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name=f"worker{turn % 3}",
            gen_ai__usage__input_tokens=999,
        )
        calls = [
            {
                "type": "tool_call",
                "id": f"c{turn}a",
                "name": "search",
                "arguments": {"q": f"query {turn}"},
            },
            {
                "type": "tool_call",
                "id": f"c{turn}b",
                "name": "fetch",
                "arguments": {"url": f"https://x/{turn}"},
            },
        ]
        span(
            base + 1,
            agent,
            "chat gpt-4o",
            base + 1,
            gen_ai__operation__name="chat",
            gen_ai__request__model="gpt-4o",
            gen_ai__response__model="gpt-4o-2024-08-06",
            gen_ai__usage__input_tokens=1200 + turn % 50,
            gen_ai__usage__output_tokens=80,
            gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": calls}]),
        )
        for k, call in enumerate(calls):
            span(
                base + 2 + k,
                agent,
                f"execute_tool {call['name']}",
                base + 2 + k,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name=call["name"],
                gen_ai__tool__call__id=call["id"],
                gen_ai__tool__call__arguments=json.dumps(call["arguments"]),
                gen_ai__tool__call__result="result text " * 8,
                _failed=(turn % 10 == 0 and k == 1),
            )
        if turn % 20 == 0:
            span(
                base + 5, agent, "db.query", base + 5, db__system="sqlite", db__statement="select 1"
            )
        turn += 1
    del out[spans:]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs(service__name="agent")},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": out}],
            }
        ]
    }


def best(fn: Any) -> tuple[float, float]:
    """``(wall, cpu)`` seconds, each the best of RUNS."""
    walls, cpus = [], []
    for _ in range(RUNS):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), min(cpus)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_text(json.dumps(make_request(SPANS)), encoding="utf-8")
        text = path.read_text(encoding="utf-8")
        size_mb = len(text) / 1e6
        (loads_wall, loads), (imported_wall, imported) = (
            best(lambda: json.loads(text)),
            best(lambda: import_trace(path)),
        )
        trace = import_trace(path)
        print(f"spans: {SPANS:,}; file {size_mb:.1f} MB; signals: {len(trace):,}")
        print(f"json.loads: {loads:.2f} s CPU ({loads_wall:.2f} s wall)")
        print(f"import_trace: {imported:.2f} s CPU ({imported_wall:.2f} s wall)")
        print(f"import_vs_json_loads_wall: {imported_wall / loads_wall:.2f}")
        del trace
        gc.collect()
        tracemalloc.start()
        parsed = json.loads(text)
        parsed_bytes = tracemalloc.get_traced_memory()[0]
        del parsed
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        kept = import_trace(path)  # held while the peak is read
        peak = tracemalloc.get_traced_memory()[1] - base
        del kept
        tracemalloc.stop()
        print(f"parsed JSON: {parsed_bytes / 1e6:.0f} MB; import peak: {peak / 1e6:.0f} MB")
        print(f"import_memory_vs_parsed: {peak / parsed_bytes:.2f}")
        print(f"import_vs_json_loads: {imported / loads:.2f}")


if __name__ == "__main__":
    main()
