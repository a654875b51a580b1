"""`signal-eval validate` and `signal-eval run --traces` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]

DATASET = """\
name: recorded
defaultAssertions:
  - type: signal.not
    pattern: "error:*"
cases:
  - id: good
    input: {code: x}
    assertions:
      - type: output.contains
        text: injection
      - type: agent.causedBy
        agentId: fixer
        triggerPattern: review:complete
  - id: bad
    input: {code: y}
    assertions:
      - type: output.contains
        text: injection
"""


def signal(name: str, payload: object = None, agent: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {"id": f"{name}-{agent}", "name": name, "payload": payload}
    if agent:
        out["source"] = {"agent": agent}
    return out


GOOD = [
    signal("harness:start", {"state": {}}),
    signal("agent:activated", {"agent": "reviewer", "trigger": "harness:start"}, "reviewer"),
    signal("text:complete", {"content": "SQL injection found"}, "reviewer"),
    signal("review:complete", {}, "reviewer"),
    signal("agent:activated", {"agent": "fixer", "trigger": "review:complete"}, "fixer"),
    signal("harness:end", {"durationMs": 12}),
]
BAD = [
    *GOOD[:2],
    signal("error:provider", {"code": 500}),
    signal("text:complete", {"content": "fine"}),
]


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, timeout=60
    )


def write_traces(directory: Path, traces: dict[str, list[dict[str, object]]]) -> None:
    directory.mkdir()
    for case_id, signals in traces.items():
        lines = "".join(json.dumps(s) + "\n" for s in signals)
        (directory / f"{case_id}.jsonl").write_text(lines, encoding="utf-8")


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    (tmp_path / "d.yaml").write_text(DATASET, encoding="utf-8")
    write_traces(tmp_path / "traces", {"good": GOOD, "bad": BAD})
    return tmp_path


def test_validate_accepts_the_shipped_datasets() -> None:
    result = run("validate", *sorted((ROOT / "datasets").glob("*.yaml")))
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout and result.stderr == ""


def test_validate_reports_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ncases:\n  - id: a\n    assertions:\n      - type: tool.caled\n        name: Edit\n",
        encoding="utf-8",
    )
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    result = run("validate", bad, empty, ROOT / "datasets" / "code-gen.yaml")
    assert result.returncode == 2
    lines = result.stderr.strip().split("\n")
    assert lines == [
        f"{bad}:5:15: unknown assertion type 'tool.caled' — did you mean 'tool.called'?",
        f"{empty}:1:1: file is empty",
    ]
    assert "Traceback" not in result.stderr


def test_validate_checks_traces(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(GOOD[0]) + "\n\n" + json.dumps(GOOD[1]) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GOOD[0]) + "\n{not json\n" + '{"payload": 1}\n', encoding="utf-8")
    assert run("validate", good).returncode == 0
    result = run("validate", bad)
    assert result.returncode == 2
    lines = result.stderr.strip().split("\n")
    assert lines[0].startswith(f"{bad}:2:2: not JSON")
    assert lines[1] == f"{bad}:3:1: not a signal: a signal needs a non-empty string 'name'"


def test_run_traces_evaluates_and_exits_1_on_failure(recorded: Path) -> None:
    out = recorded / "results.json"
    result = run("run", "d.yaml", "--traces", "traces", "--output", out, cwd=recorded)
    assert result.returncode == 1, result.stderr
    assert "good" in result.stdout and "bad" in result.stdout
    assert "1 passed, 1 failed" in result.stdout
    assert "'injection' not found" in result.stdout  # the failed assertion's message is shown
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["schemaVersion"] == 1 and data["kind"] == "dataset"
    by_id = {c["caseId"]: c for c in data["cases"]}
    assert by_id["good"]["passed"] is True and "signals" not in by_id["good"]
    assert by_id["bad"]["passed"] is False and len(by_id["bad"]["signals"]) == len(BAD)
    failed = [a["assertion"]["type"] for a in by_id["bad"]["assertions"] if not a["passed"]]
    assert failed == ["signal.not", "output.contains"]


def test_run_traces_exits_0_when_all_pass(recorded: Path) -> None:
    result = run("run", "d.yaml", "--traces", "traces", "--case", "good", cwd=recorded)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{broken\n", "traces/bad.jsonl:1:2: not JSON"),
        ('{"name": ""}\n', "traces/bad.jsonl:1:1: not a signal"),
        ("[1, 2]\n", "traces/bad.jsonl:1:1: not a signal: a signal must be an object"),
    ],
)
def test_run_traces_bad_line_exits_2(recorded: Path, content: str, message: str) -> None:
    (recorded / "traces" / "bad.jsonl").write_text(content, encoding="utf-8")
    result = run("run", "d.yaml", "--traces", "traces", cwd=recorded)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_run_traces_missing_trace_exits_2(recorded: Path) -> None:
    (recorded / "traces" / "bad.jsonl").unlink()
    result = run("run", "d.yaml", "--traces", "traces", cwd=recorded)
    assert result.returncode == 2
    assert "no recorded trace for case 'bad'" in result.stderr


def test_run_without_harness_explains_what_to_do(recorded: Path) -> None:
    result = run("run", "d.yaml", cwd=recorded)
    assert result.returncode == 2
    assert "names no harness" in result.stderr and "--traces" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "missing.yaml", "--traces", "traces"],
        ["run", "d.yaml", "--traces", "nowhere"],
        ["run", "d.yaml", "--traces", "traces", "--signals", "some"],
        ["run", "d.yaml", "--traces", "traces", "--concurrency", "0"],
        ["validate"],
        ["frobnicate"],
    ],
)
def test_bad_arguments_exit_2_without_traceback(recorded: Path, args: list[str]) -> None:
    result = run(*args, cwd=recorded)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr


def test_signals_all_and_none(recorded: Path) -> None:
    for policy, expected in (("all", {"good": True, "bad": True}), ("none", {})):
        out = recorded / f"{policy}.json"
        run("run", "d.yaml", "--traces", "traces", "--signals", policy, "-o", out, cwd=recorded)
        data = json.loads(out.read_text(encoding="utf-8"))
        kept = {c["caseId"]: True for c in data["cases"] if "signals" in c}
        assert kept == expected


FACTORIES = """\
def raises(**params):
    raise ValueError("cannot configure")

def returns_number():
    return 42

def takes_tone(tone="terse"):
    return lambda input, ctx: []
"""


@pytest.mark.parametrize(
    ("spec", "extra", "message"),
    [
        ("./h.py:raises", [], "the factory raised ValueError: cannot configure"),
        ("./h.py:returns_number", [], "the factory returned int, which is neither a harness"),
        ("./h.py:takes_tone", ["--param", "colour=red"], "the factory does not take params"),
    ],
)
def test_factory_errors_exit_2_with_the_reason(
    recorded: Path, spec: str, extra: list[str], message: str
) -> None:
    (recorded / "h.py").write_text(FACTORIES, encoding="utf-8")
    result = run("run", "d.yaml", "--harness", spec, *extra, cwd=recorded)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_line_written_to_a_log_is_never_broken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Piped or in a CI log, rich broke ``ok /a/long/path.yaml (dataset)`` inside the path
    (at 120 columns), which a reader then cannot copy nor grep; tables still get 120."""
    from rich.table import Table

    from signal_eval_cli.cli.common import _console

    monkeypatch.delenv("COLUMNS", raising=False)
    long_path = "/tmp/" + "deep/" * 40 + "code-review.yaml"
    for stderr in (False, True):
        console = _console(stderr=stderr)
        assert not console.is_terminal
        console.print(f"ok {long_path} (dataset)", highlight=False)
        table = Table("case", "failed assertions")
        table.add_row("c", "x " * 200)
        console.print(table)
        said = capsys.readouterr()
        lines = (said.err if stderr else said.out).splitlines()
        assert lines[0] == f"ok {long_path} (dataset)"
        assert {len(line) for line in lines[1:]} == {120}
