"""Runs that hostile assertions used to hang or crash (issue 11, findings 2 and 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mock_servers import MockLLMServer

from signal_eval_cli import Signal, evaluate_assertion
from signal_eval_cli.regex_budget import REGEX_BUDGET_MS

CLI = Path(sys.executable).parent / "signal-eval"


def write_traces(directory: Path, outputs: dict[str, str]) -> None:
    directory.mkdir()
    for case_id, output in outputs.items():
        signals = [
            {"id": "s1", "name": "harness:start", "payload": {"state": {}}},
            {"id": "s2", "name": "text:complete", "payload": {"content": output}},
            {"id": "s3", "name": "harness:end", "payload": {"durationMs": 3}},
        ]
        (directory / f"{case_id}.jsonl").write_text("\n".join(map(json.dumps, signals)) + "\n")


def test_a_catastrophic_regex_fails_within_its_budget_and_the_run_completes(
    tmp_path: Path,
) -> None:
    (tmp_path / "d.yaml").write_text(
        "name: redos\ncases:\n"
        "  - id: evil\n    input: x\n"
        "    assertions: [{type: output.matches, regex: '(a+)+$'}]\n"
        "  - id: fine\n    input: x\n"
        "    assertions: [{type: output.matches, regex: 'b$'}]\n"
    )
    write_traces(tmp_path / "traces", {"evil": "a" * 100_000 + "b", "fine": "ab"})
    started = time.monotonic()
    done = subprocess.run(
        [CLI, "run", "d.yaml", "--traces", "traces", "-q", "-o", "r.json", "--timeout", "5000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    cases = {c["caseId"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    evil = cases["evil"]["assertions"][0]
    assert not evil["passed"]
    assert evil["message"].startswith(f"regex took longer than {REGEX_BUDGET_MS} ms")
    assert cases["fine"]["passed"]


def test_python_only_regex_syntax_still_works() -> None:
    trace = [Signal("text:complete", {"content": "abab xyz"})]
    for regex in (r"(ab)\1", r"(?<=a)b", r"(?P<x>x)y(?P=x)?z", r"\bxyz$"):
        result = evaluate_assertion({"type": "output.matches", "regex": regex}, trace)
        assert result.passed, (regex, result.message)
    payload = {"type": "signal.contains", "pattern": "text:complete"}
    payload["payload"] = {"content": {"matches": "(a+)+$"}}  # type: ignore[assignment]
    result = evaluate_assertion(payload, [Signal("text:complete", {"content": "a" * 50 + "!"})])
    assert not result.passed


def test_a_judged_dataset_at_concurrency_8_never_crashes(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(8)]
    judge = "{type: llm.judge, criteria: [is polite], minScore: 0.5}"
    cases = "".join(f"  - id: {i}\n    input: x\n    assertions: [{judge}]\n" for i in ids)
    (tmp_path / "d.yaml").write_text(f"name: judged\ncases:\n{cases}")
    write_traces(tmp_path / "traces", dict.fromkeys(ids, "thank you"))
    verdict = json.dumps({"scores": [{"criterion": 1, "score": 0.9, "reason": "ok"}]})
    with MockLLMServer(responder=lambda call: verdict) as server:
        env = os.environ | {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "k"}

        def run(n: int) -> subprocess.CompletedProcess[str]:
            judged = ["--judge-model", "openai:gpt-4o-mini", "-o", f"r{n}.json"]
            return subprocess.run(
                [CLI, "run", "d.yaml", "--traces", "traces", "-q", "--concurrency", "8", *judged],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )

        with ThreadPoolExecutor(4) as pool:
            runs = list(pool.map(run, range(20)))
    for n, done in enumerate(runs):
        assert "unknown assertion type" not in done.stderr, done.stderr
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp_path / f"r{n}.json").read_text())["passedCases"] == 8
