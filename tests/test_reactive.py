"""The built-in reactive harness, end to end through the runner and the assertions.

Model calls are replayed from real cassette files written in ``tmp_path`` (or, where
a test needs to see the requests, answered by a small scripted :class:`Provider`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from signal_eval_cli import EvalCase, EvalDataset, RunOptions, run_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.reactive import (
    ReactiveHarness,
    create_harness,
    extract_json,
    guard_failure,
    load_agents,
    render,
)
from signal_eval_cli.providers.base import ProviderRequest, ProviderResponse
from signal_eval_cli.providers.cassette import CassetteFile
from signal_eval_cli.providers.recording import RecordingProvider
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.signals import Signal

# -- helpers ------------------------------------------------------------------------------------


def reply(
    text: str, *, tools: Sequence[tuple[str, str, dict[str, Any]]] = (), **kw: Any
) -> dict[str, Any]:
    return {
        "text": text,
        "toolCalls": [{"id": i, "name": n, "input": a, "result": "ok"} for i, n, a in tools],
        "usage": {"inputTokens": kw.get("inp", 100), "outputTokens": kw.get("out", 40)},
        "cost": kw.get("cost", 0.002),
        "latencyMs": kw.get("latency", 1500),
        "model": "claude-sonnet",
    }


def cassette(tmp_path: Path, entries: list[tuple[str, str, int, dict[str, Any]]]) -> Path:
    path = tmp_path / "cassette.yaml"
    data = {
        "version": 1,
        "entries": [{"case": c, "agent": a, "call": n, "response": r} for c, a, n, r in entries],
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run(harness: Any, cases: list[EvalCase], **options: Any) -> DatasetResult:
    dataset = EvalDataset(name="reactive", cases=cases)
    return asyncio.run(run_dataset(harness, dataset, RunOptions(**options)))


def one(
    harness: Any,
    input: Any,
    assertions: list[dict[str, Any]],
    case_id: str = "c1",
    **options: Any,
) -> CaseResult:
    cases = [EvalCase(id=case_id, input=input, assertions=assertions)]
    return run(harness, cases, **options).cases[0]


def verdicts(result: CaseResult) -> list[bool]:
    return [a.passed for a in result.assertions]


def names(result: CaseResult) -> list[str]:
    return [s.name for s in result.signals]


PIPELINE: dict[str, Any] = {
    "agents": [
        {
            "id": "planner",
            "activate_on": "harness:start",
            "model": "claude-sonnet",
            "prompt": "Plan this task: {input.task}",
            "updates": {"plan": "json"},
            "emits": ["plan:complete"],
        },
        {
            "id": "coder",
            "activate_on": ["plan:complete"],
            "when": {"state": {"plan.feasible": True}, "reason": "planner says: {state.plan.why}"},
            "model": "claude-sonnet",
            "tools": ["Write"],
            "prompt": "Implement {state.plan.steps}",
            "updates": {
                "code.path": {"tool": "Write", "input": "file_path"},
                "files": {"tool": "Write", "input": "file_path", "all": True},
            },
            "emits": [{"signal": "code:complete", "payload": {"path": {"state": "code.path"}}}],
        },
    ]
}

PLAN = 'Plan ready.\n```json\n{"feasible": true, "steps": ["write a", "write b"]}\n```'
VAGUE = 'Too vague.\n```json\n{"feasible": false, "why": "no target named"}\n```'
WRITES = [
    ("t1", "Write", {"file_path": "src/a.ts", "content": "export const a = 1;"}),
    ("t2", "Write", {"file_path": "src/b.ts", "content": "export const b = 2;"}),
]


@pytest.fixture
def pipeline(tmp_path: Path) -> ReactiveHarness:
    path = cassette(
        tmp_path,
        [
            ("build", "planner", 0, reply(PLAN, cost=0.003, latency=2000)),
            (
                "build",
                "coder",
                0,
                reply("Wrote both files.", tools=WRITES, cost=0.004, latency=3000),
            ),
            ("vague", "planner", 0, reply(VAGUE, latency=1200)),
        ],
    )
    return create_harness(PIPELINE, cassette=path)


# -- assertions through the harness ------------------------------------------------------------


def test_trajectory_causality_snapshot_tool_and_metric_assertions(
    pipeline: ReactiveHarness,
) -> None:
    checks: list[tuple[dict[str, Any], bool]] = [
        (
            {
                "type": "signal.trajectory",
                "patterns": [
                    "harness:start",
                    {"pattern": "agent:activated", "payload": {"agent": "planner"}},
                    "plan:complete",
                    {"pattern": "agent:activated", "payload": {"agent": "coder"}},
                    "code:complete",
                    "harness:end",
                ],
            },
            True,
        ),
        ({"type": "signal.trajectory", "patterns": ["code:complete", "plan:complete"]}, False),
        ({"type": "agent.causedBy", "agentId": "coder", "triggerPattern": "plan:complete"}, True),
        ({"type": "agent.causedBy", "agentId": "coder", "triggerPattern": "harness:start"}, False),
        ({"type": "agent.emitted", "agentId": "planner", "signal": "plan:complete"}, True),
        ({"type": "agent.emitted", "agentId": "coder", "signal": "plan:complete"}, False),
        (
            {
                "type": "snapshot.at",
                "afterSignal": "plan:complete",
                "path": "plan.steps[1]",
                "value": "write b",
            },
            True,
        ),
        (
            {
                "type": "snapshot.at",
                "afterSignal": "agent:activated",
                "path": "plan",
                "exists": False,
            },
            True,
        ),
        (
            {
                "type": "snapshot.at",
                "afterSignal": "plan:complete",
                "path": "files",
                "exists": True,
            },
            False,
        ),
        ({"type": "snapshot.final", "path": "files", "value": {"contains": "src/b.ts"}}, True),
        ({"type": "snapshot.final", "path": "code.path", "value": "src/b.ts"}, True),
        ({"type": "tool.called", "name": "Write", "exact": 2}, True),
        ({"type": "tool.called", "name": "Bash"}, False),
        (
            {
                "type": "tool.calledWith",
                "name": "Write",
                "args": {"file_path": {"endsWith": "a.ts"}},
            },
            True,
        ),
        ({"type": "tool.sequence", "tools": ["Write", "Write"]}, True),
        ({"type": "metric.cost.max", "value": 0.0071}, True),
        ({"type": "metric.cost.max", "value": 0.0069}, False),
        ({"type": "metric.tokens.min", "value": 280}, True),
        ({"type": "metric.tokens.max", "value": 279}, False),
        ({"type": "metric.latency.min", "value": 5000}, True),  # recorded 2000 + 3000 ms
        ({"type": "metric.latency.max", "value": 4999}, False),
        ({"type": "metric.activations", "exact": 2}, True),
        ({"type": "signal.count", "pattern": "state:*:changed", "exact": 3}, True),
        ({"type": "signal.not", "pattern": "error:*"}, True),
    ]
    result = one(pipeline, {"task": "two files"}, [c for c, _ in checks], case_id="build")
    assert result.error is None
    wrong = [
        (a.assertion, a.message)
        for a, (_, want) in zip(result.assertions, checks, strict=True)
        if a.passed != want
    ]
    assert not wrong, wrong
    assert result.metrics.cost == pytest.approx(0.007)
    assert result.metrics.latency_ms >= 5000


def test_false_guard_skips_with_its_reason(pipeline: ReactiveHarness) -> None:
    result = one(
        pipeline,
        {"task": "make it better"},
        [
            {
                "type": "agent.skipped",
                "agentId": "coder",
                "reason": "planner says: no target named",
            },
            {"type": "agent.skipped", "agentId": "planner"},
            {"type": "agent.activated", "agentId": "coder"},
            {"type": "metric.activations", "exact": 1},
            {"type": "signal.not", "pattern": "code:complete"},
        ],
        case_id="vague",
    )
    assert verdicts(result) == [True, False, False, True, True]
    skipped = next(s for s in result.signals if s.name == "agent:skipped")
    trigger = next(s for s in result.signals if s.name == "plan:complete")
    assert skipped.payload == {
        "agent": "coder",
        "reason": "planner says: no target named",
        "trigger": "plan:complete",
    }
    assert skipped.parent == trigger.id and skipped.agent == "coder"


def test_every_signal_names_its_agent_and_cause(pipeline: ReactiveHarness) -> None:
    result = one(pipeline, {"task": "x"}, [], case_id="build")
    seen: dict[str, Signal] = {}
    for signal in result.signals:
        assert signal.id and signal.timestamp
        if signal.name != "harness:start":
            assert signal.parent in seen, f"{signal.name} has no earlier parent"
        if not signal.name.startswith("harness:"):
            assert signal.agent in ("planner", "coder"), signal
        seen[signal.id] = signal
    by_name = {s.name: s for s in result.signals}
    assert seen[by_name["plan:complete"].parent].name == "agent:activated"
    assert seen[by_name["provider:start"].parent].name == "agent:activated"
    assert by_name["harness:start"].payload == {
        "agents": ["planner", "coder"],
        "state": {"task": "x"},
    }
    end = by_name["harness:end"].payload
    assert end["activations"] == 2 and end["state"]["code"] == {"path": "src/b.ts"}
    change = by_name["state:files:changed"].payload
    assert change == {
        "key": "files",
        "oldValue": None,
        "newValue": ["src/a.ts", "src/b.ts"],
        "agent": "coder",
    }


def test_snapshot_at_sees_the_state_of_that_moment(tmp_path: Path) -> None:
    agents = [
        {
            "id": "first",
            "activate_on": "harness:start",
            "updates": {"phase": {"value": "one"}},
            "emits": ["step:one"],
        },
        {
            "id": "second",
            "activate_on": "step:one",
            "updates": {"phase": {"value": "two"}},
            "emits": ["step:two"],
        },
        {"id": "again", "activate_on": "step:two", "updates": {"phase": {"value": "two"}}},
    ]
    harness = create_harness(agents, cassette=cassette(tmp_path, []))
    result = one(
        harness,
        {"phase": "zero"},
        [
            {"type": "snapshot.at", "afterSignal": "step:one", "path": "phase", "value": "one"},
            {"type": "snapshot.at", "afterSignal": "step:one", "path": "phase", "value": "two"},
            {"type": "snapshot.final", "path": "phase", "value": "two"},
            {
                "type": "signal.count",
                "pattern": "state:phase:changed",
                "exact": 2,
            },  # no-op write: no signal
        ],
    )
    assert verdicts(result) == [True, False, True, True]
    first = next(s for s in result.signals if s.name == "state:phase:changed")
    assert first.payload["oldValue"] == "zero" and first.payload["newValue"] == "one"


def test_end_when_terminates_and_says_why(tmp_path: Path) -> None:
    agents = {
        "agents": [
            {
                "id": "ping",
                "activate_on": ["harness:start", "pong"],
                "updates": {"pinged": {"value": True}},
                "emits": ["ping"],
            },
            {"id": "pong", "activate_on": "ping", "emits": ["pong"]},
        ],
        "end_when": {"state": {"pinged": True}, "reason": "pinged once"},
    }
    result = one(
        create_harness(agents, cassette=cassette(tmp_path, [])),
        {},
        [
            {"type": "agent.activated", "agentId": "pong"},
            {"type": "signal.last", "pattern": "harness:*", "payload": {"activations": 1}},
        ],
    )
    assert verdicts(result) == [False, True]
    terminating = next(s for s in result.signals if s.name == "harness:terminating")
    assert terminating.payload == {
        "reason": "pinged once",
        "agent": "ping",
        "state": {"pinged": True},
    }
    assert names(result)[-2:] == ["harness:terminating", "harness:end"]
    assert result.signals[-1].parent == terminating.id


def test_max_activations_ends_a_runaway_loop_with_an_error_signal(tmp_path: Path) -> None:
    agents = [
        {"id": "ping", "activate_on": ["harness:start", "pong"], "emits": ["ping"]},
        {"id": "pong", "activate_on": "ping", "emits": ["pong"]},
    ]
    result = one(
        create_harness(agents, cassette=cassette(tmp_path, []), max_activations=6),
        {},
        [{"type": "signal.not", "pattern": "error:*"}, {"type": "metric.activations", "exact": 6}],
        timeout=60,  # a loop that is never stopped times out instead of hanging the suite
    )
    assert verdicts(result) == [False, True]
    assert "error:max-activations" in result.assertions[0].message
    error = next(s for s in result.signals if s.name == "error:max-activations")
    assert error.payload["code"] == "max_activations" and error.payload["limit"] == 6
    assert (
        "runaway loop stopped" in error.payload["error"]
        and "max_activations" in error.payload["error"]
    )
    assert names(result)[-2:] == ["harness:terminating", "harness:end"]


def test_a_loop_of_guard_skips_is_a_runaway_too(tmp_path: Path) -> None:
    agents = [
        {"id": "gate", "activate_on": "harness:start", "when": {"state": {"open": True}}},
        {"id": "watch", "activate_on": "agent:skipped", "when": {"state": {"open": True}}},
    ]
    result = one(
        create_harness(agents, cassette=cassette(tmp_path, []), max_activations=3),
        {"open": False},
        [{"type": "signal.not", "pattern": "error:*"}],
    )
    assert verdicts(result) == [False]
    assert names(result).count("agent:skipped") == 30
    assert (
        "guard skips"
        in next(s for s in result.signals if s.name == "error:max-activations").payload["error"]
    )


def test_cassette_miss_fails_the_case_naming_case_agent_and_request(tmp_path: Path) -> None:
    harness = create_harness(
        PIPELINE, cassette=cassette(tmp_path, [("build", "planner", 0, reply(PLAN))])
    )
    results = run(
        harness,
        [
            EvalCase(id="build", input={"task": "x"}, assertions=[]),
            EvalCase(
                id="unrecorded",
                input={"task": "y"},
                assertions=[{"type": "signal.contains", "pattern": "harness:start"}],
            ),
        ],
    )
    build, missing = results.cases
    assert not build.passed and "agent 'coder', call #0" in (build.error or "")
    assert not missing.passed
    error = missing.error or ""
    assert error.startswith("ProviderError: cassette") and "case 'unrecorded'" in error
    assert "agent 'planner'" in error and "(request " in error and "cassette.yaml" in error
    assert missing.assertions == []  # an errored case is not evaluated
    assert [n for n in names(missing) if "error" in n] == ["provider:error", "agent:error"]


class ScriptedProvider:
    """A provider that answers from a script and remembers what it was asked."""

    name = "scripted"

    def __init__(self, answers: Callable[[ProviderRequest], ProviderResponse]) -> None:
        self.answers = answers
        self.calls: list[tuple[ProviderRequest, ProviderResponse]] = []

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        response = self.answers(request)
        self.calls.append((request, response))
        return response


def test_recorded_requests_replay_and_a_changed_prompt_is_stale(tmp_path: Path) -> None:
    def answer(request: ProviderRequest) -> ProviderResponse:
        text = PLAN if request.agent == "planner" else "Done."
        calls = [] if request.agent == "planner" else None
        return ProviderResponse(
            text,
            input_tokens=50,
            output_tokens=10,
            cost=0.001,
            latency_ms=700,
            tool_calls=calls or [],
        )

    live = ScriptedProvider(answer)
    recorder = RecordingProvider(CassetteFile(tmp_path / "rec.jsonl"), live, mode="record")
    first = one(create_harness(PIPELINE, provider=recorder), {"task": "t"}, [], case_id="build")
    assert [r.agent for r, _ in live.calls] == ["planner", "coder"]
    assert live.calls[0][0].messages[-1]["content"] == "Plan this task: t"
    assert live.calls[1][0].messages[-1]["content"] == 'Implement ["write a", "write b"]'
    assert recorder.save() == [tmp_path / "rec.jsonl"]
    replay = one(
        create_harness(PIPELINE, cassette=tmp_path / "rec.jsonl"),
        {"task": "t"},
        [],
        case_id="build",
    )
    assert names(replay) == names(first) and replay.error is None

    changed = {
        "agents": [
            {**PIPELINE["agents"][0], "prompt": "Plan carefully: {input.task}"},
            PIPELINE["agents"][1],
        ]
    }
    stale = one(
        create_harness(changed, cassette=tmp_path / "rec.jsonl"), {"task": "t"}, [], case_id="build"
    )
    assert "changed since call #0 was recorded" in (stale.error or "")


def test_params_reach_templates_and_runner_params_override(tmp_path: Path) -> None:
    live = ScriptedProvider(lambda r: ProviderResponse("ok"))
    agents = [
        {
            "id": "a",
            "activate_on": "harness:start",
            "prompt": "tone={params.tone} case={case.id} trig={trigger.name}",
            "system": "S {params.tone}",
        }
    ]
    one(create_harness(agents, provider=live, tone="strict"), {}, [], case_id="k1")
    messages = live.calls[0][0].messages
    assert messages == [
        {"role": "system", "content": "S strict"},
        {"role": "user", "content": "tone=strict case=k1 trig=harness:start"},
    ]
    run(
        create_harness(agents, provider=live, tone="strict"),
        [EvalCase(id="k2", input={}, assertions=[])],
        params={"tone": "gentle"},
    )
    assert live.calls[-1][0].messages[-1]["content"].startswith("tone=gentle")


def test_recorded_deltas_stream_as_text_delta(tmp_path: Path) -> None:
    streamed = {**reply("Hello there"), "deltas": ["Hel", "lo ", "there"]}
    harness = create_harness(
        [{"id": "a", "activate_on": "harness:start", "prompt": "hi"}],
        cassette=cassette(tmp_path, [("c1", "a", 0, streamed)]),
    )
    result = one(harness, {}, [{"type": "output.contains", "text": "Hello there"}])
    assert result.passed
    assert [s.payload["content"] for s in result.signals if s.name == "text:delta"] == [
        "Hel",
        "lo ",
        "there",
    ]


def test_concurrent_cases_do_not_share_state(tmp_path: Path) -> None:
    entries = [
        (
            f"c{i}",
            "planner",
            0,
            {**reply(f'```json\n{{"feasible": false, "why": "case {i}"}}\n```'), "latencyMs": 40},
        )
        for i in range(8)
    ]
    harness = create_harness(PIPELINE, cassette=cassette(tmp_path, entries), latency_scale=25.0)
    cases = [
        EvalCase(
            id=f"c{i}",
            input={"task": str(i)},
            assertions=[
                {"type": "agent.skipped", "agentId": "coder", "reason": f"planner says: case {i}"}
            ],
        )
        for i in range(8)
    ]
    started = time.perf_counter()
    result = run(harness, cases, concurrency=8)
    assert all(c.passed for c in result.cases), [c.assertions[0].message for c in result.cases]
    # In turn, the 8 replayed sleeps alone take 8 s; together 1 s and the overhead.
    assert time.perf_counter() - started < 8


# -- factory and loading ------------------------------------------------------------------------------


def test_agents_file_and_default_cassette_resolve_against_the_dataset(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "agents" / "flow.yaml").write_text(yaml.safe_dump(PIPELINE))
    cassette(tmp_path / "cassettes", [])
    (tmp_path / "cassettes" / "cassette.yaml").rename(tmp_path / "cassettes" / "my-eval.yaml")
    harness = create_harness("agents/flow.yaml", dataset_path=tmp_path / "my-eval.yaml")
    assert [a.id for a in harness.spec.agents] == ["planner", "coder"]
    with pytest.raises(InputError, match=r"cassettes/flow\.yaml.*cassette not found"):
        create_harness("agents/flow.yaml", dataset_dir=tmp_path)  # default: the agents file's stem
    # through the entry point, as the CLI does: dataset_dir comes from base_dir
    via_cli = resolve_harness(
        "reactive",
        {"agents": "agents/flow.yaml", "cassette": "cassettes/my-eval.yaml"},
        base_dir=tmp_path,
    )
    assert isinstance(via_cli, ReactiveHarness)
    with pytest.raises(InputError, match="pass cassette=PATH"):
        create_harness(PIPELINE)
    with pytest.raises(InputError, match="max_activations"):
        create_harness(
            PIPELINE, provider=ScriptedProvider(lambda r: ProviderResponse("")), max_activations=0
        )


def test_agents_file_problems_point_at_the_line(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        "agents:\n"
        "  - id: a\n"
        "    activateOn: [harness:start]\n"
        "  - id: a\n"
        "    activate_on: x\n"
        "    updates:\n"
        "      plan: {json: plan, value: 1}\n"
        "    when: {state: {score: {gte: high}}}\n"
    )
    with pytest.raises(InputError) as caught:
        load_agents(path)
    found = [str(p) for p in caught.value.problems]
    assert any(p.startswith(f"{path}:3:5:") and "did you mean 'activate_on'" in p for p in found), (
        found
    )
    path.write_text(path.read_text().replace("activateOn", "activate_on"))
    with pytest.raises(InputError) as caught:
        load_agents(path)
    found = [str(p) for p in caught.value.problems]
    assert any(p.startswith(f"{path}:4:") and "duplicate agent id 'a'" in p for p in found), found
    assert any(
        p.startswith(f"{path}:7:") and "exactly one of json, tool, state, value" in p for p in found
    ), found
    assert any(p.startswith(f"{path}:8:") and "'gte' needs a number" in p for p in found), found


def test_agents_may_be_a_mapping_of_id_to_agent() -> None:
    spec = load_agents({"a": {"activate_on": "harness:start"}, "b": {"activate_on": ["x:*"]}})
    assert [a.id for a in spec.agents] == ["a", "b"]
    assert [a.id for a in spec.agents_for("x:done")] == ["b"]
    assert spec.agents_for("x:done:later") == ()


def test_other_provider_specs_go_to_the_registry(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="provider 'nope:model'"):
        create_harness(PIPELINE, provider="nope:model")


# -- pure helpers ----------------------------------------------------------------------------------------


def test_render() -> None:
    context = {
        "input": {"code": "x = {1}", "n": 3, "tags": ["a"]},
        "state": {"plan": {"steps": ["s"]}},
    }
    assert (
        render("{input.code}|{input.n}|{input.tags}|{state.plan.steps[0]}", context)
        == 'x = {1}|3|["a"]|s'
    )
    assert render("{missing.path} and {input.none}", context) == " and "
    assert render('{{literal}} {"json": 1} { input.n }', context) == '{literal} {"json": 1} 3'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Here:\n```json\n{"a": 1}\n```\nand\n```json\n{"a": 2}\n```', (True, {"a": 2})),
        ('```ts\nconst x = {a: 1};\n```\nSummary:\n```\n{"ok": true}\n```', (True, {"ok": True})),
        ('{"whole": [1, 2]}', (True, {"whole": [1, 2]})),
        ('The result is {"n": 3} as promised.', (True, {"n": 3})),
        ("```ts\nconst x = {a: 1};\n```", (False, None)),
        ("no json here", (False, None)),
    ],
)
def test_extract_json(text: str, expected: tuple[bool, Any]) -> None:
    assert extract_json(text) == expected


def test_guard_failure_explains_the_first_failing_condition() -> None:
    state = {"plan": {"status": "ready", "score": 0.4}}
    trigger = Signal("review:complete", {"issues": 2})
    assert guard_failure({"state": {"plan.status": "ready"}}, state, trigger) is None
    assert guard_failure({"state": {"plan.score": {"gte": 0.7}}}, state, trigger) == (
        "state 'plan.score' is 0.4, expected {\"gte\": 0.7}"
    )
    assert "is missing" in str(guard_failure({"state": {"plan.owner": "me"}}, state, trigger))
    assert (
        guard_failure({"signal": "review:*", "payload": {"issues": {"gt": 0}}}, state, trigger)
        is None
    )
    assert "does not match" in str(guard_failure({"signal": "plan:*"}, state, trigger))
    assert "does not match" in str(guard_failure({"payload": {"issues": 0}}, state, trigger))
    either = {"any": [{"state": {"plan.status": "done"}}, {"state": {"plan.score": {"lt": 0.5}}}]}
    assert guard_failure(either, state, trigger) is None
    assert "none of the alternatives" in str(
        guard_failure({"any": [{"state": {"plan.status": "x"}}]}, state, trigger)
    )
    assert (
        guard_failure(
            {"all": [{"state": {"plan.status": "ready"}}, {"not": {"state": {"plan.score": 1}}}]},
            state,
            trigger,
        )
        is None
    )
    assert "'not' condition holds" in str(
        guard_failure({"not": {"state": {"plan.status": "ready"}}}, state, trigger)
    )


def test_signal_eval_validate_knows_agents_files(tmp_path: Path) -> None:
    from signal_eval_cli.validate import validate_path

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(PIPELINE))
    assert validate_path(good) == ("agents", [])
    bad = tmp_path / "bad.yaml"
    bad.write_text("agents:\n  - id: a\n    activate_on: []\n")
    kind, found = validate_path(bad)
    assert kind == "invalid" and str(found[0]).startswith(f"{bad}:3:18:")


def test_a_placeholder_that_can_never_name_a_value_is_a_located_error(tmp_path: Path) -> None:
    """``{input.nope}`` (no case's input holds it) and ``{answer}`` (no such root) rendered
    as nothing in every case, in silence. ``validate`` and ``run`` refuse them before any
    case, located; an input field that only some cases hold stays optional."""
    from signal_eval_cli.loading import load_document
    from signal_eval_cli.validate import check_dataset

    (tmp_path / "d.yaml").write_text(
        "name: d\nharness: {factory: reactive, params: {agents: a.yaml, provider: 'openai:m'}}\n"
        "defaultAssertions: [{type: output.contains, text: x}]\n"
        "cases:\n  - {id: one, input: {who: x}}\n  - {id: two, input: {whom: y}}\n"
    )

    def problems(prompt: str) -> list[str]:
        agents = {"agents": [{"id": "a", "activate_on": "harness:start", "prompt": prompt}]}
        (tmp_path / "a.yaml").write_text(yaml.safe_dump(agents))
        try:
            check_dataset(load_document(tmp_path / "d.yaml"))
        except InputError as exc:
            return [str(p) for p in exc.problems]
        return []

    assert problems("hi {input.who} {input.whom} {state.later} {{literal}}") == []
    (typo,) = problems("hi {input.nope}")
    assert typo.startswith(f"{tmp_path / 'd.yaml'}:2:")  # at the agents param
    assert "agent 'a' names {input.nope}, which no case's input holds" in typo
    (root,) = problems("hi {answer}")
    assert root.startswith(f"{tmp_path / 'a.yaml'}:")
    assert "placeholder {answer} names no value" in root
