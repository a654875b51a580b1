"""Comparing results minus timings (what differs between two runs of the same cases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TIMING_KEYS = {
    "durationMs", "startedAt", "completedAt", "timestamp", "evaluationMs",
    "caseIndex", "caseIndexSha256",  # the index holds latencies
    "id", "parentId", "parent",  # signal ids are random per run
    "workdir",  # a temp dir per run
}  # fmt: skip


def without_timings(value: Any) -> Any:
    """``value`` with every timing field dropped (and aggregate latencies)."""
    if isinstance(value, dict):
        return {
            k: without_timings(v)
            for k, v in value.items()
            if k not in TIMING_KEYS and not (k.endswith("LatencyMs") or k == "latencyMs")
        }
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def load(path: Path) -> Any:
    return without_timings(json.loads(path.read_text()))


def scenario_essence(path: Path) -> Any:
    """A scenario run's results minus what differs between runs of the same scenarios:
    timings (also inside goal messages), signal ids, the temp workspace's path."""
    data = load(path)
    for item in [*data["scenarios"], *data["cases"]]:
        item["signals"] = [
            (s["name"], {k: v for k, v in s["payload"].items() if k != "path"})
            for s in item.get("signals", [])
        ]
    for case in data["cases"]:
        case["assertions"] = [(a["assertion"], a["passed"]) for a in case["assertions"]]
    return data


def scenario_matrix_essence(path: Path) -> Any:
    """A matrix of agents over scenarios minus what differs between runs of the same
    matrix: timings, the ranking (latency ties), each case's signals (temp paths) and
    its assertions' messages (goal timings)."""
    data = load(path)
    del data["recommendation"], data["comparison"]
    for variant in data["variants"]:
        for case in variant["result"]["cases"]:
            case.pop("signals", None)
            case["assertions"] = [(a["assertion"], a["passed"]) for a in case["assertions"]]
    return data
