"""Cassettes: load/validate (YAML, JSON, JSONL); recorded, saved and replayed by the run's one
record/replay path (RecordingProvider over the proxy's Recorder)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from signal_eval_cli import HarnessContext
from signal_eval_cli.errors import InputError
from signal_eval_cli.providers.base import (
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ToolCallRecord,
    call_provider,
)
from signal_eval_cli.providers.cassette import Cassette, CassetteFile
from signal_eval_cli.providers.recording import RecordingProvider
from signal_eval_cli.signals import Signal


def request(
    case: str = "c1", agent: str = "reviewer", call: int = 0, text: str = "hi", run_: int = 0
) -> ProviderRequest:
    return ProviderRequest(
        case_id=case,
        agent=agent,
        messages=[{"role": "user", "content": text}],
        call=call,
        run=run_,
    )


def response(text: str = "Looks good.", **kw: Any) -> ProviderResponse:
    return ProviderResponse(
        text=text,
        input_tokens=kw.pop("input_tokens", 120),
        output_tokens=kw.pop("output_tokens", 30),
        cost=kw.pop("cost", 0.0008),
        latency_ms=kw.pop("latency_ms", 850),
        model="claude-sonnet",
        **kw,
    )


def write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


ENTRY = {
    "case": "sql-injection",
    "agent": "reviewer",
    "call": 0,
    "response": {
        "text": "SQL injection.",
        "deltas": ["SQL ", "injection."],
        "toolCalls": [{"id": "t1", "name": "Read", "input": {"file_path": "a.ts"}, "result": "x"}],
        "usage": {"inputTokens": 10, "outputTokens": 4},
        "cost": 0.0012,
        "latencyMs": 850,
        "model": "claude-sonnet",
    },
}


class Scripted:
    """The model a recording is made from: answers each request as it is told to."""

    name = "scripted"

    def __init__(self) -> None:
        self.answers: dict[str, ProviderResponse] = {}

    async def complete(self, request: ProviderRequest, on_delta: Any = None) -> ProviderResponse:
        return self.answers[request.key]


def record(path: Path, calls: list[tuple[ProviderRequest, ProviderResponse]]) -> None:
    model = Scripted()
    recorder = RecordingProvider(CassetteFile(path), model, mode="record")
    for live, answer in calls:
        model.answers[live.key] = answer
        asyncio.run(recorder.complete(live))
    assert recorder.save() == [path]


def replay(path: Path, live: ProviderRequest) -> ProviderResponse:
    return asyncio.run(RecordingProvider.replaying(path).complete(live))


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_record_save_load_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"c{suffix}"
    first = response("First.", deltas=["Fir", "st."])
    second = response(
        "Second.\nwith a newline",
        tool_calls=[ToolCallRecord("toolu_1", "Edit", {"file_path": "x.ts"}, "ok")],
    )
    record(path, [(request(), first), (request(agent="fixer"), second)])

    loaded = Cassette.load(path)
    assert len(loaded) == 2
    assert replay(path, request()).to_dict() == first.to_dict()
    assert replay(path, request(agent="fixer")).to_dict() == second.to_dict()
    assert [e.request for e in loaded] == [request().key, request(agent="fixer").key]
    if suffix == ".jsonl":
        lines = path.read_text().splitlines()
        assert [json.loads(line)["agent"] for line in lines] == ["reviewer", "fixer"]


def test_yaml_keeps_multiline_text_readable(tmp_path: Path) -> None:
    record(tmp_path / "c.yaml", [(request(), response("line one\nline two\n"))])
    text = (tmp_path / "c.yaml").read_text()
    assert "text: |" in text and "  line two" in text


def test_save_order_is_deterministic_whatever_the_recording_order(tmp_path: Path) -> None:
    """New cases by id; a case's calls in the order they were made (its agents' calls)."""

    def recorded(order: list[tuple[str, str]]) -> str:
        path = tmp_path / "c.yaml"
        path.unlink(missing_ok=True)
        calls = {"reviewer": 0, "fixer": 1}
        record(
            path,
            [
                (request(case, agent, calls[agent]), response(f"{case}/{agent}"))
                for case, agent in order
            ],
        )
        return path.read_text()

    one = recorded([("b", "reviewer"), ("a", "reviewer"), ("b", "fixer"), ("a", "fixer")])
    two = recorded([("a", "reviewer"), ("b", "reviewer"), ("a", "fixer"), ("b", "fixer")])
    assert one == two
    entries = yaml.safe_load(one)["entries"]
    assert [(e["case"], e["agent"]) for e in entries] == [
        ("a", "reviewer"),
        ("a", "fixer"),
        ("b", "reviewer"),
        ("b", "fixer"),
    ]


def test_rerecording_replaces_in_place(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    live = ProviderRequest("sql-injection", "reviewer", [{"role": "user", "content": "x"}])
    record(path, [(live, response("Re-recorded."))])
    assert len(Cassette.load(path)) == 1
    assert replay(path, live).text == "Re-recorded."


def test_a_replay_returns_a_copy(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    replayer = RecordingProvider.replaying(path)
    got = asyncio.run(replayer.complete(request("sql-injection")))
    got.tool_calls.clear()
    got.text = "mutated"
    again = asyncio.run(replayer.complete(request("sql-injection", run_=1)))
    assert again.text == "SQL injection." and len(again.tool_calls) == 1


def test_without_request_keys_an_agents_entries_answer_its_calls_in_order(tmp_path: Path) -> None:
    """A hand-written cassette: no request keys, entries in any order in the file."""
    entries = [
        {**ENTRY, "call": 1, "response": {"text": "second"}},
        {**ENTRY, "agent": "fixer", "response": {"text": "fixed"}},
        {**ENTRY, "response": {"text": "first"}},
    ]
    replayer = RecordingProvider.replaying(
        write(tmp_path / "c.yaml", {"version": 1, "entries": entries})
    )
    asked = [request("sql-injection", "reviewer", 0), request("sql-injection", "fixer", 0)]
    asked.append(request("sql-injection", "reviewer", 1))
    assert [asyncio.run(replayer.complete(r)).text for r in asked] == ["first", "fixed", "second"]


def test_a_one_call_case_run_twice_at_once_replays_both_times(tmp_path: Path) -> None:
    """The judge's: each call is a case run of its own, so two identical verdicts asked at
    once (two outputs alike) each replay the recording, neither a used-up miss."""
    slow = {**ENTRY, "response": {**ENTRY["response"], "latencyMs": 50}}
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [slow]})
    judge = RecordingProvider(
        CassetteFile(path), mode="replay", latency_scale=1.0, one_call_cases=True
    )

    async def both() -> list[ProviderResponse]:
        live = request("sql-injection")
        return list(await asyncio.gather(judge.complete(live), judge.complete(live)))

    assert [r.text for r in asyncio.run(both())] == ["SQL injection."] * 2


def test_each_run_of_a_repeated_case_is_recorded_and_replayed_as_its_own(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, [(request(run_=0), response("first")), (request(run_=1), response("second"))])
    entries = yaml.safe_load(path.read_text())["entries"]
    assert [(e["case"], e.get("run"), e["response"]["text"]) for e in entries] == [
        ("c1", None, "first"),
        ("c1", 1, "second"),
    ]
    assert [replay(path, request(run_=n)).text for n in (1, 0, 2)] == ["second", "first", "first"]


# -- misses and stale recordings ----------------------------------------------------------------


def test_miss_names_case_agent_call_request_and_path(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    live = request("sql-injection", "fixer", call=2)
    with pytest.raises(ProviderError) as caught:
        replay(path, live)
    message = str(caught.value)
    assert caught.value.code == "cassette_miss"
    for part in (
        "'sql-injection'",
        "'fixer'",
        "call #2",
        "(request ",
        str(path),
        "only for reviewer",
    ):
        assert part in message, part


def test_miss_for_an_unknown_case_says_so(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    with pytest.raises(ProviderError, match="nothing is recorded for this case"):
        replay(path, request("xss"))


def test_recorded_request_key_must_match_the_live_one(tmp_path: Path) -> None:
    recorded = request("sql-injection", text="review v1")
    path = write(
        tmp_path / "c.yaml", {"version": 1, "entries": [{**ENTRY, "request": recorded.key}]}
    )
    assert replay(path, recorded).text == "SQL injection."
    changed = request("sql-injection", text="review v2")
    with pytest.raises(ProviderError, match="changed since call #0 was recorded") as caught:
        replay(path, changed)
    assert caught.value.code == "cassette_miss"
    assert recorded.key in str(caught.value) and changed.key in str(caught.value)


# -- malformed files ----------------------------------------------------------------------------------


def problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as caught:
        Cassette.load(path)
    return [str(p) for p in caught.value.problems]


def test_schema_problems_point_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "version: 1\n"
        "entries:\n"
        "  - case: a\n"
        "    agent: reviewer\n"
        "    call: -1\n"
        "    response: {text: ok}\n"
        "  - case: b\n"
        "    agent: reviewer\n"
        "    call: 0\n"
        "    respnse: {text: ok}\n"
    )
    found = problems(path)
    assert any(p.startswith(f"{path}:5:11:") for p in found), found
    assert any(f"{path}:10:5:" in p and "did you mean 'response'" in p for p in found), found


def test_missing_text_and_tool_id_are_reported(tmp_path: Path) -> None:
    bad = {**ENTRY, "response": {"toolCalls": [{"name": "Read"}]}}
    found = problems(write(tmp_path / "c.yaml", {"version": 1, "entries": [bad]}))
    assert any("'text'" in p for p in found) and any("'id'" in p for p in found), found


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda e: [e, e], "duplicate entry for case 'sql-injection', agent 'reviewer', call 0"),
        (
            lambda e: [{**e, "response": {**e["response"], "deltas": ["SQL"]}}],
            "deltas do not add up to the text",
        ),
        (
            lambda e: [e, {**e, "agent": "fixer"}],
            "tool call id 't1' is used twice in case 'sql-injection'",
        ),
    ],
)
def test_semantic_problems(tmp_path: Path, mutate: Any, expected: str) -> None:
    found = problems(write(tmp_path / "c.yaml", {"version": 1, "entries": mutate(ENTRY)}))
    assert any(expected in p for p in found), found


def test_jsonl_problems_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = json.dumps(ENTRY)
    path.write_text(f"{good}\n\n{{not json\n" + json.dumps({**ENTRY, "call": "zero"}) + "\n")
    found = problems(path)
    assert len(found) == 1 and found[0].startswith(f"{path}:3:2: invalid JSON"), found
    path.write_text(f"{good}\n" + json.dumps({**ENTRY, "call": "zero"}) + "\n")
    found = problems(path)
    assert found and all(p.startswith(f"{path}:2:1:") for p in found), found


def test_unreadable_and_wrong_version(tmp_path: Path) -> None:
    assert "cannot read" in problems(tmp_path / "missing.yaml")[0]
    found = problems(write(tmp_path / "c.yaml", {"version": 2, "entries": []}))
    assert any("version" in p for p in found), found


# -- the provider ----------------------------------------------------------------------------------------


def emitted(provider: RecordingProvider, live: ProviderRequest) -> list[Signal]:
    signals: list[Signal] = []

    def emit(
        name: str, payload: Any = None, *, agent: str | None = None, parent: Any = None
    ) -> Signal:
        parent_id = parent.id if isinstance(parent, Signal) else parent
        signal = Signal(name, payload, f"s{len(signals)}", None, agent, parent_id)
        signals.append(signal)
        return signal

    asyncio.run(call_provider(provider, live, emit))
    return signals


def test_provider_replays_deltas_tools_usage_cost_and_latency(tmp_path: Path) -> None:
    provider = RecordingProvider.replaying(
        write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    )
    assert provider.name == "cassette"
    signals = emitted(provider, request("sql-injection"))
    assert [s.name for s in signals] == [
        "provider:start",
        "text:delta",
        "text:delta",
        "text:complete",
        "tool:call",
        "tool:result",
        "provider:end",
    ]
    assert [s.payload["content"] for s in signals[1:3]] == ["SQL ", "injection."]
    assert signals[4].payload == {"id": "t1", "name": "Read", "input": {"file_path": "a.ts"}}
    assert signals[5].payload["result"] == "x" and signals[5].parent == "s4"
    end = signals[-1].payload
    assert end["usage"] == {"inputTokens": 10, "outputTokens": 4}
    assert end["cost"] == 0.0012 and end["durationMs"] == 850 and end["output"] == "SQL injection."


def test_provider_miss_emits_provider_error_and_raises(tmp_path: Path) -> None:
    provider = RecordingProvider.replaying(
        write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})
    )
    with pytest.raises(ProviderError):
        emitted(provider, request("nope"))


def test_latency_scale_really_sleeps_and_default_does_not(tmp_path: Path) -> None:
    an_hour = {**ENTRY, "response": {**ENTRY["response"], "latencyMs": 3_600_000}}
    hour = write(tmp_path / "h.yaml", {"version": 1, "entries": [an_hour]})
    live = request("sql-injection")
    # By default the recorded hour is not slept: a bound on that hang, not on speed.
    asyncio.run(asyncio.wait_for(RecordingProvider.replaying(hour).complete(live), 60))
    path = write(tmp_path / "c.yaml", {"version": 1, "entries": [ENTRY]})  # latencyMs 850
    started = time.perf_counter()
    asyncio.run(RecordingProvider.replaying(path, latency_scale=0.2).complete(live))
    assert time.perf_counter() - started >= 0.16
    with pytest.raises(ValueError):
        RecordingProvider.replaying(path, latency_scale=-1)


# -- what a case run cut short, a killed run and a borrowing repeat leave ------------------------


class Held(Scripted):
    """Answers as told, but a request whose text is ``hold`` never returns (until cancelled)."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()

    async def complete(self, request: ProviderRequest, on_delta: Any = None) -> ProviderResponse:
        if request.messages[-1]["content"] == "hold":
            self.holding.set()
            await asyncio.Event().wait()
        return await super().complete(request, on_delta)


class At(NamedTuple):
    """A case run, as the runner names it to a recorder."""

    case_id: str
    run: int = 0


def calls_of(path: Path) -> list[int]:
    return [e.call for e in Cassette.load(path).entries]


def test_a_call_cancelled_mid_case_keeps_the_whole_old_recording(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, [(request(call=0), response("one")), (request(call=1, text="two"), response())])
    assert calls_of(path) == [0, 1]
    model = Held()
    again = RecordingProvider(CassetteFile(path), model, mode="record")
    model.answers[request(call=0).key] = response("one, again")

    async def cut_short() -> None:
        await again.complete(request(call=0))
        second = asyncio.ensure_future(again.complete(request(call=1, text="hold")))
        await model.holding.wait()
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second

    asyncio.run(cut_short())
    again.save()
    assert calls_of(path) == [0, 1]
    assert replay(path, request(call=1, text="two")).text == "Looks good."


def test_a_case_that_crashes_between_its_calls_keeps_its_old_recording(tmp_path: Path) -> None:
    """The runner closes the provider's case run when the case ends: a crash after the
    first call (not in a call) is a case cut short too."""
    from signal_eval_cli import EvalCase, EvalDataset, RunOptions, run_dataset

    path = tmp_path / "c.yaml"
    record(path, [(request(call=0), response("one")), (request(call=1, text="two"), response())])
    model = Scripted()
    model.answers[request(call=0).key] = response("one, again")
    again = RecordingProvider(CassetteFile(path), model, mode="record")

    async def harness(input: Any, ctx: Any) -> None:
        await again.complete(request(ctx.case_id, call=0, run_=ctx.run))
        raise RuntimeError("the harness crashed before its second call")

    cases = [EvalCase(id="c1", input={}, assertions=[])]
    result = asyncio.run(run_dataset(harness, EvalDataset(name="d", cases=cases), RunOptions()))
    assert result.cases[0].error is not None and "crashed" in result.cases[0].error
    again.save()
    assert calls_of(path) == [0, 1]
    assert replay(path, request(call=0)).text == "one"


def test_a_killed_run_leaves_each_finished_case_in_the_backlog_and_the_next_run_saves_it(
    tmp_path: Path,
) -> None:
    from signal_eval_cli.proxy.cassette import Interaction, ProxyCassette
    from signal_eval_cli.proxy.matching import request_key
    from signal_eval_cli.proxy.recorder import Recorder

    path = tmp_path / "d.proxy.yaml"
    recorder = Recorder(ProxyCassette(path), "record")
    for case in ("a", "b"):
        session = recorder.open_session(case)
        body = {"messages": [{"role": "user", "content": case}]}
        session.add(Interaction(case, 0, "POST", "/v1/chat/completions", body, 200, {"a": case}))
        recorder.close(At(case))
    recorder.open_session("c").add(
        Interaction("c", 0, "POST", "/v1/chat/completions", {}, 200, {"a": "c"})
    )
    # killed here: never saved. The file exists (empty); the backlog holds a and b.
    assert path.is_file() and ProxyCassette(path).load() == []
    backlog = path.with_name(path.name + ".unsaved")
    with backlog.open("ab") as out:
        out.write(b'{"case":"torn","run":0,"calls":[')  # a line the kill cut short
    nxt = Recorder(ProxyCassette(path), "replay")
    nxt.open_session("x")  # loads
    assert sorted(i.case for i in ProxyCassette(path).load()) == ["a", "b"]
    assert not backlog.exists()
    body = {"messages": [{"role": "user", "content": "b"}]}
    found = nxt.open_session("b").take(request_key("POST", "/v1/chat/completions", body, None))
    assert found is not None and found.response == {"a": "b"}


def test_the_backlog_is_on_disk_as_each_case_ends_also_after_a_save(tmp_path: Path) -> None:
    """The backlog stays open between cases; each case's line is on disk when it ends,
    and a save (which removes the file) leaves the next case a new file."""
    from signal_eval_cli.proxy.backlog import Backlog
    from signal_eval_cli.proxy.cassette import Interaction

    path = tmp_path / "per-case" / "d.proxy.yaml"
    backlog = Backlog(path)

    def add(case: str) -> None:
        call = Interaction(case, 0, "POST", "/v1/chat/completions", {}, 200, {"a": case})
        backlog.add((case, 0), [call])

    add("a")
    add("b")
    assert list(Backlog(path).read()) == [("a", 0), ("b", 0)]  # as another process sees it
    backlog.clear()
    assert not backlog.path.exists()
    add("c")
    assert list(Backlog(path).read()) == [("c", 0)]


def test_the_backlog_never_holds_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key a harness echoed into a call is redacted in the backlog as in the cassette:
    key-like variables and SIGNAL_EVAL_REDACT's names, raw and JSON-escaped, every case."""
    from signal_eval_cli.proxy.backlog import Backlog
    from signal_eval_cli.proxy.cassette import Interaction

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123456")
    monkeypatch.setenv("MY_PASS", 'pa"ss-word-99')
    monkeypatch.setenv("SIGNAL_EVAL_REDACT", "my_*")
    backlog = Backlog(tmp_path / "d.proxy.yaml")
    for case in ("a", "b"):
        answer = {"said": f'{case} sk-secret-123456 and pa"ss-word-99'}
        backlog.add((case, 0), [Interaction(case, 0, "POST", "/v1/x", {}, 200, answer)])
    text = backlog.path.read_text()
    assert "sk-secret" not in text and "ss-word" not in text
    assert text.count("[REDACTED:OPENAI_API_KEY]") == 2 and text.count("[REDACTED:MY_PASS]") == 2
    said = [
        calls[0].response["said"]
        for calls in Backlog(backlog.path.parent / "d.proxy.yaml").read().values()
    ]
    assert said == [f"{c} [REDACTED:OPENAI_API_KEY] and [REDACTED:MY_PASS]" for c in "ab"]


@pytest.mark.parametrize("store", ["entries", "proxy"])
def test_record_missing_repeat_that_borrowed_run_0_keeps_what_it_used(
    tmp_path: Path, store: str
) -> None:
    """A repeat without its own recording replays run 0's; once it records a call of its
    own, its recording holds the calls it borrowed as well, so it replays again."""
    from signal_eval_cli.proxy.cassette import Interaction, ProxyCassette
    from signal_eval_cli.proxy.matching import request_key
    from signal_eval_cli.proxy.recorder import Recorder

    if store == "entries":
        path = tmp_path / "c.yaml"
        record(
            path, [(request(call=0), response("one")), (request(call=1, text="two"), response())]
        )
        model = Scripted()
        model.answers[request(call=1, text="changed").key] = response("new two")
        missing = RecordingProvider(CassetteFile(path), model, mode="record-missing")

        async def run_1() -> list[str]:
            first = await missing.complete(request(call=0, run_=1))
            second = await missing.complete(request(call=1, text="changed", run_=1))
            return [first.text, second.text]

        assert asyncio.run(run_1()) == ["one", "new two"]
        missing.save()
        replayed = [
            replay(path, request(call=0, run_=1)).text,
            replay(path, request(call=1, text="changed", run_=1)).text,
        ]
        assert replayed == ["one", "new two"]
        return
    path = tmp_path / "d.proxy.yaml"

    def call(n: int, text: str, run: int = 0) -> Interaction:
        body = {"messages": [{"role": "user", "content": text}]}
        return Interaction("a", n, "POST", "/v1/chat/completions", body, 200, {"t": text}, run=run)

    def key(text: str) -> str:
        return request_key("POST", "/v1/chat/completions", call(0, text).body, None)

    ProxyCassette(path).save({("a", 0): [call(0, "one"), call(1, "two")]}, replace=True)
    missing = Recorder(ProxyCassette(path), "record-missing")
    session = missing.open_session("a", 1)
    assert session.take(key("one")) is not None and session.take(key("changed")) is None
    session.add(call(1, "changed", run=1))
    missing.close(At("a", 1))
    missing.save()
    again = Recorder(ProxyCassette(path), "replay").open_session("a", 1)
    assert again.take(key("one")) is not None and again.take(key("changed")) is not None


def test_a_borrowed_call_keeps_the_place_it_had_in_the_repeat(tmp_path: Path) -> None:
    """Run 1 records a new first call, then replays run 0's first call as its second: both
    are kept (numbered as run 1 made them, so neither replaces the other)."""
    path = tmp_path / "c.yaml"
    record(path, [(request(call=0), response("one"))])
    model = Scripted()
    model.answers[request(call=0, text="new", run_=1).key] = response("new one")
    missing = RecordingProvider(CassetteFile(path), model, mode="record-missing")

    async def run_1() -> list[str]:
        first = await missing.complete(request(call=0, text="new", run_=1))
        second = await missing.complete(request(call=1, run_=1))
        return [first.text, second.text]

    assert asyncio.run(run_1()) == ["new one", "one"]
    missing.save()
    runs = [(e.run, e.call) for e in Cassette.load(path).entries]
    assert sorted(runs) == [(0, 0), (1, 0), (1, 1)]
    assert replay(path, request(call=1, run_=1)).text == "one"
    assert replay(path, request(call=0, text="new", run_=1)).text == "new one"


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_an_answer_holding_a_lone_surrogate_is_saved_readable(tmp_path: Path, suffix: str) -> None:
    """A model's answer cut inside an emoji's pair (JSON ``"\\ud83d"``): PyYAML wrote it as
    an escape it then refused to read ("invalid Unicode character escape code"), so the
    next run could not load the cassette it had just recorded."""
    path = tmp_path / f"c{suffix}"
    record(path, [(request(), response("cut \ud83d here"))])
    assert replay(path, request()).text in ("cut \ud83d here", "cut \ufffd here")


def test_a_finished_case_run_is_not_kept_unless_it_has_something_to_tell(
    tmp_path: Path,
) -> None:
    """Every ended session was kept, with the case's context (all its signals) through its
    emit: --repeat 20000 of the starter's 3 cases grew to 480 MB. Only a miss or a failure
    is told at the end; the rest is let go."""
    from signal_eval_cli.proxy.cassette import ProxyCassette
    from signal_eval_cli.proxy.recorder import Recorder

    recorder = Recorder(ProxyCassette(tmp_path / "d.proxy.yaml"), "replay")
    contexts = [HarnessContext(case, {}) for case in ("quiet", "missed")]
    for ctx in contexts:
        recorder.open_session(ctx.case_id, 0, ctx.emit)
    missed = recorder.sessions[("missed", 0)]
    missed.miss("POST /v1/chat/completions", "/v1/chat/completions", {}, "k", 0)
    for ctx in contexts:
        recorder.close(At(ctx.case_id))
    assert recorder.finished == [missed] and missed.emit is None
    assert len(recorder.misses) == 1 and "case 'missed'" in recorder.misses[0]
