"""The real LLM judge: scripted verdicts from the loopback mock, strict parsing, cache, cassettes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import review_trace
from mock_servers import Call, Fault, MockLLMServer, Reply
from typer.testing import CliRunner

from signal_eval_cli import evaluate_assertion
from signal_eval_cli.assertions import JudgeRequest
from signal_eval_cli.cli import app
from signal_eval_cli.judges import (
    JUDGE_MODEL_ENV,
    JudgeError,
    JudgeParseError,
    LLMJudge,
    judge_messages,
    judge_spec,
    parse_verdict,
    resolve_judge_model,
)
from signal_eval_cli.providers.base import ProviderError
from signal_eval_cli.providers.cassette import Cassette

KEY = "sk-test-judge-77aa88bb99cc"
CRITERIA = ["names the vulnerability", "proposes a fix"]
ASSERTION = {"type": "llm.judge", "criteria": CRITERIA, "minScore": 0.7}
FAST = {"timeout": 1.0, "max_retries": 1, "retry_base_delay": 0.01}


def verdict(*scores: float, reason: str = "because") -> str:
    return json.dumps(
        {
            "scores": [
                {"criterion": i, "score": s, "reason": reason} for i, s in enumerate(scores, 1)
            ]
        }
    )


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer() as server:
        yield server


@pytest.fixture
def server(mock: MockLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLMServer]:
    mock.reset()
    mock.responder = lambda call: verdict(1.0, 1.0)
    monkeypatch.setenv("OPENAI_BASE_URL", mock.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    yield mock
    mock.reset()


def make_judge(
    server: MockLLMServer, model: str | None = "openai:judge-model", **kw: Any
) -> LLMJudge:
    return LLMJudge(model, provider_options=FAST, **kw)


# -- parsing ------------------------------------------------------------------------------------


def test_parse_a_valid_verdict() -> None:
    result = parse_verdict(verdict(0.9, 0.4, reason=" ok "), CRITERIA)
    assert result.scores == {CRITERIA[0]: 0.9, CRITERIA[1]: 0.4}
    assert result.reasons == {CRITERIA[0]: "ok", CRITERIA[1]: "ok"}
    fenced = "```json\n" + verdict(1, 0) + "\n```"
    assert parse_verdict(fenced, CRITERIA).scores == {CRITERIA[0]: 1.0, CRITERIA[1]: 0.0}


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("The output looks great! 10/10", "not JSON"),
        ("Here you go: " + verdict(1, 1), "not JSON"),
        ('{"score": 1}', '"scores" list'),
        ('{"scores": [1, 2]}', "entry 1 is not an object"),
        (verdict(1), "no score for criterion 2"),
        (verdict(1, 1, 1), "names criterion 3, but there are 2"),
        (verdict(1.2, 1), "outside 0..1"),
        (verdict(-0.1, 1), "outside 0..1"),
        ('{"scores": [{"criterion": 1, "score": "high", "reason": ""}]}', 'no numeric "score"'),
        ('{"scores": [{"criterion": 1, "score": true, "reason": ""}]}', 'no numeric "score"'),
        ('{"scores": [{"criterion": "1", "score": 1, "reason": ""}]}', 'integer "criterion"'),
        ('{"scores": [{"criterion": 1, "score": 1}]}', '"reason" string'),
        (
            '{"scores": [{"criterion": 1, "score": 1, "reason": ""}, '
            '{"criterion": 1, "score": 1, "reason": ""}]}',
            "scored twice",
        ),
        ("", "not JSON"),
    ],
)
def test_garbage_is_a_parse_error(answer: str, why: str) -> None:
    with pytest.raises(JudgeParseError, match="not a valid verdict") as raised:
        parse_verdict(answer, CRITERIA)
    assert why in str(raised.value)


def test_prompt_carries_criteria_rubric_output_and_trajectory() -> None:
    request = JudgeRequest(
        CRITERIA, "the output", rubric="Be strict.", trajectory="#0 harness:start"
    )
    system, user = judge_messages(request)
    assert '"scores"' in system["content"] and "0 to 1" in system["content"]
    assert "1. names the vulnerability\n2. proposes a fix" in user["content"]
    assert "Rubric:\nBe strict." in user["content"]
    assert "<<<OUTPUT\nthe output\nOUTPUT>>>" in user["content"]
    assert "#0 harness:start" in user["content"]
    without = judge_messages(JudgeRequest(CRITERIA, "x"))[1]["content"]
    assert "Trajectory" not in without and "Rubric" not in without


def test_model_configuration() -> None:
    assert resolve_judge_model("cli", "dataset", {JUDGE_MODEL_ENV: "env"}) == "cli"
    assert resolve_judge_model(None, "dataset", {JUDGE_MODEL_ENV: "env"}) == "dataset"
    assert resolve_judge_model(None, None, {JUDGE_MODEL_ENV: "env"}) == "env"
    assert resolve_judge_model(None, None, {}) is None
    assert judge_spec("claude-sonnet-4-20250514") == "anthropic:claude-sonnet-4-20250514"
    assert judge_spec("gpt-4o-mini") == "openai:gpt-4o-mini"
    assert judge_spec("openai:claude-proxy") == "openai:claude-proxy"


# -- llm.judge through the mock --------------------------------------------------------------------


def test_judge_passes_on_a_good_scripted_verdict(server: MockLLMServer) -> None:
    server.responder = lambda c: verdict(0.9, 0.6, reason="clear")
    judge = make_judge(server)
    try:
        result = evaluate_assertion(
            {**ASSERTION, "rubric": "Security first.", "includeTrajectory": True},
            review_trace(),
            judge=judge,
        )
    finally:
        judge.close()
    assert result.passed, result.message
    assert "judge score 0.75 ≥ 0.70" in result.message and "clear" in result.message
    (call,) = server.calls
    assert call.body["model"] == "judge-model" and call.body["temperature"] == 0.0
    assert "Security first." in call.prompt and "#0 harness:start" in call.prompt
    assert "Found a SQL injection; fixed it." in call.prompt


def test_judge_fails_on_a_low_scripted_verdict(server: MockLLMServer) -> None:
    server.responder = lambda c: verdict(0.5, 0.2, reason="vague")
    judge = make_judge(server)
    try:
        result = evaluate_assertion(ASSERTION, review_trace(), judge=judge)
    finally:
        judge.close()
    assert not result.passed
    assert "judge score 0.35 < 0.70" in result.message and "vague" in result.message


def test_malformed_judge_output_fails_with_the_parse_error(server: MockLLMServer) -> None:
    server.responder = lambda c: "I would rate this output highly, about 9/10."
    judge = make_judge(server)
    try:
        result = evaluate_assertion(ASSERTION, review_trace(), judge=judge)
    finally:
        judge.close()
    assert not result.passed
    assert "judge failed: JudgeParseError: judge answer is not a valid verdict" in result.message
    assert "9/10" in result.message


@pytest.mark.parametrize("fault", [Fault.malformed(), Fault.status_code(401, "bad key {key}")])
def test_a_failed_judge_call_fails_the_assertion(server: MockLLMServer, fault: Fault) -> None:
    server.fail_next(fault)
    judge = make_judge(server)
    try:
        result = evaluate_assertion(ASSERTION, review_trace(), judge=judge)
    finally:
        judge.close()
    assert not result.passed and "judge failed: ProviderCallError" in result.message
    assert KEY not in result.message


def test_anthropic_judge_and_the_assertion_model_wins(server: MockLLMServer) -> None:
    judge = make_judge(server, model="openai:default-model")
    try:
        result = evaluate_assertion(
            {**ASSERTION, "model": "claude-sonnet-4-20250514", "temperature": 0.3},
            review_trace(),
            judge=judge,
        )
    finally:
        judge.close()
    assert result.passed, result.message
    (call,) = server.calls
    assert call.api == "anthropic" and call.body["model"] == "claude-sonnet-4-20250514"
    assert call.body["temperature"] == 0.3 and "impartial evaluator" in call.body["system"]


def test_no_model_anywhere_fails_clearly(server: MockLLMServer) -> None:
    judge = make_judge(server, model=None)
    with pytest.raises(JudgeError, match="no judge model configured"):
        judge.judge(JudgeRequest(CRITERIA, "x"))
    judge.close()


def test_judge_calls_are_cached_by_model_prompt_and_temperature(server: MockLLMServer) -> None:
    judge = make_judge(server)
    try:
        for _ in range(3):
            judge.judge(JudgeRequest(CRITERIA, "same output"))
        judge.judge(JudgeRequest(CRITERIA, "same output", temperature=0.5))
        judge.judge(JudgeRequest(CRITERIA, "other output"))
    finally:
        judge.close()
    assert len(server.calls) == 3 and judge.cache_hits == 2


def test_each_run_of_a_repeated_case_is_judged_on_its_own(
    server: MockLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "judge.yaml"
    judge = make_judge(server, cassette=path, mode="record")
    try:
        for run in (0, 1, 2, 1):
            judge.judge(JudgeRequest(CRITERIA, "same output", run=run))
    finally:
        judge.close()
    assert len(server.calls) == 3 and judge.cache_hits == 1
    assert len({entry.case for entry in Cassette.load(path)}) == 3  # replayed per run too


def test_a_cassette_recorded_before_runs_were_judged_apart_still_replays(
    server: MockLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "judge.yaml"
    recording = make_judge(server, cassette=path, mode="record")
    first = recording.judge(JudgeRequest(CRITERIA, "same output"))  # run 0 only
    recording.close()
    calls = len(server.calls)
    replay = make_judge(server, cassette=path, mode="replay")
    try:
        again = replay.judge(JudgeRequest(CRITERIA, "same output", run=2))
        with pytest.raises(ProviderError, match="cassette"):
            replay.judge(JudgeRequest(CRITERIA, "another output", run=2))
    finally:
        replay.close()
    assert again == first and len(server.calls) == calls


def test_run_0_keeps_the_cassette_key_recorded_before_runs_were_judged_apart(
    server: MockLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "judge.yaml"
    judge = make_judge(server, cassette=path, mode="record")
    request = JudgeRequest(CRITERIA, "an output")
    judge.judge(request)
    judge.close()
    prompt = json.dumps(judge_messages(request), ensure_ascii=False)
    identity = json.dumps([judge_spec("openai:judge-model"), prompt, 0.0]).encode()
    assert [e.case for e in Cassette.load(path)] == [
        f"judge-{hashlib.sha256(identity).hexdigest()[:16]}"
    ]


def test_judge_calls_are_recorded_and_replayed(server: MockLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    recording = make_judge(server, cassette=path, mode="record")
    first = recording.judge(JudgeRequest(CRITERIA, "an output"))
    recording.close()
    (entry,) = list(Cassette.load(path))
    assert entry.agent == "judge" and entry.case.startswith("judge-")
    assert KEY not in path.read_text()
    calls = len(server.calls)
    offline = LLMJudge("openai:judge-model", cassette=path)  # auto: the cassette exists
    try:
        assert offline.judge(JudgeRequest(CRITERIA, "an output")) == first
        with pytest.raises(Exception, match="no recorded answer for case 'judge-"):
            offline.judge(JudgeRequest(CRITERIA, "an output never judged"))
    finally:
        offline.close()
    assert len(server.calls) == calls


def test_a_pickled_judge_records_for_the_original_which_alone_writes(
    server: MockLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a Ray actor gets: a copy with the driver's endpoints and cassette entries that
    never writes the file; the original keeps what the copies hand back, once per call.
    After hand_over() (on an actor) no recorder made there writes either."""
    import pickle

    from signal_eval_cli.providers.recording import absorb_handed, hand_over, take_handed

    path = tmp_path / "judge.yaml"
    original = make_judge(server, cassette=path, mode="record")
    original.judge(JudgeRequest(CRITERIA, "judged by the original"))
    original.save()
    saved = path.read_text()
    other = tmp_path / "other.yaml"
    hand_over()
    try:
        elsewhere = make_judge(server, cassette=other, mode="record")
    finally:
        hand_over(False)
    first = pickle.loads(pickle.dumps(original))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the copies' own env
    copies = [first, *(pickle.loads(pickle.dumps(original)) for _ in range(2))]  # a rerun
    try:
        verdicts = [c.judge(JudgeRequest(CRITERIA, "judged by a copy")) for c in copies]
        assert len(set(map(repr, verdicts))) == 1
        elsewhere.judge(JudgeRequest(CRITERIA, "judged after hand_over"))
        for judge in [*copies, elsewhere]:
            judge.close()
        assert path.read_text() == saved and not other.exists()  # none of them wrote
        handed = take_handed([])  # a judge's calls are its own cases, each done when made

        def calls(path: Path) -> int:
            return sum(len(v) for h in handed[path] for v in h.recorded.values())

        assert calls(path) == 3 and calls(other) == 1
        assert take_handed([]) == {}  # handed over once
    finally:
        for judge in copies:
            judge.close()
    absorb_handed({path: handed[path]})
    original.close()
    cases = [e.case for e in Cassette.load(path)]
    assert len(cases) == len(set(cases)) == 2  # the copies' call, once


# -- the CLI: --judge-model, record and replay ------------------------------------------------


def judged_dataset(tmp_path: Path, judge_model: str | None = None) -> Path:
    data: dict[str, Any] = {
        "name": "judged",
        "cases": [
            {"id": "good", "assertions": [ASSERTION]},
            {"id": "bad", "assertions": [{**ASSERTION, "criteria": ["is bad"]}]},
        ],
    }
    if judge_model:
        data["judge"] = {"model": judge_model}
    path = tmp_path / "judged.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    traces = tmp_path / "traces"
    traces.mkdir()
    for case in ("good", "bad"):
        lines = [json.dumps(s.to_dict()) for s in review_trace()]
        (traces / f"{case}.jsonl").write_text("\n".join(lines) + "\n")
    return path


def scripted(call: Call) -> Reply:
    return Reply(verdict(0.1) if "1. is bad" in call.prompt else verdict(0.9, 0.8))


@pytest.mark.parametrize("how", ["flag", "env", "dataset"])
def test_cli_judge_model_record_then_replay(
    server: MockLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    server.responder = scripted
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv(JUDGE_MODEL_ENV, raising=False)
    dataset = judged_dataset(tmp_path, "openai:judge-model" if how == "dataset" else None)
    flag = ["--judge-model", "openai:judge-model"] if how == "flag" else []
    if how == "env":
        monkeypatch.setenv(JUDGE_MODEL_ENV, "openai:judge-model")
    runner = CliRunner()
    base = ["run", str(dataset), "--traces", str(tmp_path / "traces"), "--quiet", *flag]
    recorded = runner.invoke(app, [*base, "--record", "-o", str(tmp_path / "rec.json")])
    assert recorded.exit_code == 1, recorded.output  # "bad" fails, honestly
    assert "recorded 2 call(s)" in recorded.output
    assert (tmp_path / "cassettes" / "judged.judge.yaml").is_file()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = runner.invoke(app, [*base, "-o", str(tmp_path / "rep.json")])
    assert replayed.exit_code == 1, replayed.output
    assert len(server.calls) == 2

    def summary(name: str) -> dict[str, Any]:
        data = json.loads((tmp_path / name).read_text())
        cases = data.get("cases") or data["results"]
        return {c["caseId"]: [(a["passed"], a["message"]) for a in c["assertions"]] for c in cases}

    assert summary("rec.json") == summary("rep.json")
    assert summary("rep.json")["good"][0][0] is True
    assert summary("rep.json")["bad"][0][0] is False
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace")
