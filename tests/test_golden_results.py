"""The example datasets' results, pinned: a refactor or a speed-up must not change them.

Each example runs offline through the real CLI (``--signals all``), and its results file,
minus what differs between two runs of the same cases (timings, latencies and the
latency assertions' readings, the random part of signal ids), must equal the committed
``tests/golden/<name>.json``. A deliberate change of behaviour updates the files with
``SIGNAL_EVAL_UPDATE_GOLDEN=1 pytest tests/test_golden_results.py``, and the diff of the
golden files shows in review exactly what users will see change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from flows_helpers import ROOT, cli

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = {  # name -> the CLI arguments that run it, from the repository root
    "code-review": ["run", "datasets/code-review.yaml"],
    "code-gen": ["run", "datasets/code-gen.yaml"],
    "debugging": ["run", "datasets/debugging.yaml"],
    "refactoring": ["run", "datasets/refactoring.yaml"],
    "frameworks": ["run", "datasets/frameworks.yaml", "--traces", "datasets/traces"],
    "matrix-code-review": ["matrix", "datasets/matrix-code-review.yaml"],
}
RUN_TO_RUN = {  # what two runs of the same cases may differ in
    "durationMs", "startedAt", "completedAt", "timestamp", "evaluationMs",
    "caseIndex", "caseIndexSha256",  # the index holds latencies
}  # fmt: skip


def essence(value: Any) -> Any:
    """``value`` minus what differs between runs; signal ids renamed by their order."""
    if isinstance(value, list):
        return [essence(v) for v in value]
    if isinstance(value, str):  # a matrix's trade-off quotes a wall-clock ratio
        return re.sub(r"\b\d+% faster", "N% faster", value)
    if not isinstance(value, dict):
        return value
    out = {
        k: essence(v)
        for k, v in value.items()
        if k not in RUN_TO_RUN and not k.endswith(("LatencyMs", "latencyMs"))
    }
    kind = value.get("assertion", {}).get("type", "") if "assertion" in value else ""
    if isinstance(kind, str) and kind.startswith("metric.latency"):
        out.pop("actual", None)  # a wall-clock reading, and the message quoting it
        out.pop("message", None)
    if isinstance(out.get("signals"), list):
        out["signals"] = _renamed(out["signals"])
    return out


def _renamed(signals: list[Any]) -> list[Any]:
    names = {s["id"]: f"s{i}" for i, s in enumerate(signals) if isinstance(s, dict) and "id" in s}
    for signal in signals:
        if isinstance(signal, dict):
            if "id" in signal:
                signal["id"] = names[signal["id"]]
            source = signal.get("source")
            if isinstance(source, dict) and source.get("parent") in names:
                source["parent"] = names[source["parent"]]
    return signals


def first_difference(got: Any, want: Any, where: str = "$") -> str | None:
    """The path of the first place ``got`` and ``want`` differ, with both values."""
    if type(got) is not type(want):
        return f"{where}: {got!r:.200} != {want!r:.200}"
    if isinstance(got, dict):
        for key in sorted(set(got) | set(want)):
            if key not in got or key not in want:
                return f"{where}.{key}: only in {'the run' if key in got else 'the golden file'}"
            found = first_difference(got[key], want[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(got, list):
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None if len(got) == len(want) else f"{where}: {len(got)} items != {len(want)}"
    return None if got == want else f"{where}: {got!r:.200} != {want!r:.200}"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_examples_give_the_pinned_results(tmp_path: Path, name: str) -> None:
    output = tmp_path / f"{name}.json"
    done = cli(*EXAMPLES[name], "-q", "--signals", "all", "-o", str(output), cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    got = essence(json.loads(output.read_text(encoding="utf-8")))
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("SIGNAL_EVAL_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert got == want, first_difference(got, want)


def test_the_essence_keeps_what_a_change_of_behaviour_changes() -> None:
    """The comparison can fail: a verdict, a message or the order of signals is kept."""
    case = {
        "passed": True,
        "durationMs": 5,
        "assertions": [
            {"assertion": {"type": "output.contains"}, "message": "ok", "actual": 1},
            {"assertion": {"type": "metric.latency.max"}, "message": "7 ms", "actual": 7},
        ],
        "signals": [
            {"id": "sig_1_ab", "name": "a", "timestamp": "t1"},
            {"id": "sig_2_ab", "name": "b", "source": {"parent": "sig_1_ab"}},
        ],
    }
    assert essence(case) == {
        "passed": True,
        "assertions": [
            {"assertion": {"type": "output.contains"}, "message": "ok", "actual": 1},
            {"assertion": {"type": "metric.latency.max"}},
        ],
        "signals": [
            {"id": "s0", "name": "a"},
            {"id": "s1", "name": "b", "source": {"parent": "s0"}},
        ],
    }
    assert essence("haiku is 76% cheaper and 64% faster") == "haiku is 76% cheaper and N% faster"
    changed = json.loads(json.dumps(case))
    changed["assertions"][0]["message"] = "fine"
    assert first_difference(essence(changed), essence(case)) == (
        "$.assertions[0].message: 'fine' != 'ok'"
    )
