"""A production trace becomes a regression test: ``signal-eval import TRACE --case-into D``.

The drafted case passes on its trace (run through ``run --traces``, from a directory
outside the repo, for every committed fixture) and fails when a fact of the trace
changes (a wrong tool argument, a reversed order, another agent, an extra tool call).
Appending inserts text into the user's file: every byte of it is kept.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import sig, trace
from flows_helpers import cli

from signal_eval_cli import (
    EvalCase,
    Signal,
    Trace,
    draft_case,
    evaluate_assertions,
    import_cases,
    import_trace,
    load_dataset,
    write_jsonl,
)
from signal_eval_cli.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
ALL = sorted(p.name for p in FIXTURES.iterdir())
FAILED_RUNS = {  # runs cut short: not the scripted conversation to its end
    n for n in ALL if any(k in n for k in ("max_turns", "_error", "_refused", "_limit"))
}
OTHER_RUNS = {  # other conversations: a structured answer; a graph paused before its tools
    "otel_pydantic_ai_structured.json",
    "langgraph_paused_before_tools_updates.jsonl",
    "langgraph_tool_in_node_events.jsonl",  # and a node that calls a tool itself
    "langgraph_agent_node_events.jsonl",  # a prebuilt agent as a node; a Send fan-out
    "langgraph_fanout_messages.jsonl",
    "langgraph_fanout_tasks.jsonl",
    "langgraph_supervisor_subgraph_tasks.jsonl",  # langgraph-supervisor's
    "langgraph_supervisor_updates.jsonl",
    "otel_openinference_langgraph_transfer_tool.json",  # a transfer as a tool; a pause
    "otel_openllmetry_langgraph_interrupt.json",
    "langgraph_goto_events.jsonl",  # a handoff by Command(goto=...)
    "langgraph_goto_updates.jsonl",
    "otel_openllmetry_agents.json",  # model calls whose spans hold no answer nor usage
    "langgraph_parallel_messages.jsonl",  # parallel nodes; the functional API
    "langgraph_functional_events.jsonl",
    "langgraph_functional_stream.jsonl",
    "langgraph_functional_updates.jsonl",
    "otel_openllmetry_langgraph_goto.jsonl",
    "otel_openinference_langgraph_goto.json",
    "otel_openllmetry_langgraph_supervisor.jsonl",
    "otel_openinference_langgraph_supervisor.json",
}
PARTS = {n for n in ALL if "_flush" in n}  # a trace split across files: each file a part
WITH_TOOLS = [n for n in ALL if "simple" not in n and n not in FAILED_RUNS | OTHER_RUNS]
SIMPLE = [n for n in ALL if "simple" in n and n not in PARTS]
NO_INPUT = {
    "langgraph_updates.jsonl",
    "langgraph_messages.jsonl",
    "langgraph_stream_chat.jsonl",
    "langgraph_swarm_updates.jsonl",
}  # astream in these modes: no input
NO_AGENTS = {"langgraph_values.jsonl"}  # "values" does not say which node ran


def verdicts(case: EvalCase, t: Trace) -> dict[str, bool]:
    """``type → passed`` (several of a type: all must pass)."""
    out: dict[str, bool] = {}
    for result in evaluate_assertions(case.assertions, t):
        kind = result.assertion["type"]
        out[kind] = out.get(kind, True) and result.passed
    return out


def mutated(t: Trace, change: Any) -> Trace:
    signals = [Signal.from_dict(s.to_dict()) for s in t]
    change(signals)
    return Trace(signals, t.input)


def tool_calls(signals: list[Signal]) -> list[Signal]:
    return [s for s in signals if s.name == "tool:call"]


# -- the drafted case on every fixture ----------------------------------------------


def test_every_fixture_becomes_a_case_that_passes_on_its_trace(tmp_path: Path) -> None:
    """The CLI, run as a user would (outside the repo): import --case-into, then run."""
    traces = tmp_path / "traces"
    shutil.copytree(FIXTURES, traces)
    result = cli(
        "import", *(f"traces/{n}" for n in ALL), "--case-into", "evals/x.yaml", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    for name in ALL:
        assert f"appended case '{Path(name).stem}' to evals/x.yaml" in result.stdout
    dataset = load_dataset(tmp_path / "evals" / "x.yaml")
    assert [c.id for c in dataset.cases] == [Path(n).stem for n in ALL]
    for case in dataset.cases:
        assert case.input == import_trace(next(traces.glob(f"{case.id}.*"))).input
    run = cli("run", "evals/x.yaml", "--traces", "traces", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(ALL)} passed, 0 failed" in run.stdout


@pytest.mark.parametrize("name", WITH_TOOLS)
def test_drafted_assertions_state_trajectory_arguments_status_and_output(name: str) -> None:
    t = import_trace(FIXTURES / name)
    case = draft_case(t, "c")
    question = None if name in NO_INPUT else "What is the weather in Paris and Rome?"
    assert case.input == question
    kinds = [a["type"] for a in case.assertions]
    assert kinds == [
        "signal.trajectory",
        "tool.calledWith",
        "tool.calledWith",
        "tool.calledWith",
        "tool.parallel",
        "output.contains",
    ]
    steps = case.assertions[0]["patterns"]
    # a plain client loop: no handoff; a raise is text
    loop = name.startswith(("otel_openai", "otel_logfire_openai"))
    one_agent = loop or name.startswith("otel_vercel_ai")  # the AI SDK's: no handoff either
    ends = {"to": "weather"} if name in NO_AGENTS else {"from": "triage", "to": "weather"}
    handoff = {"pattern": "agent:handoff", "payload": ends}
    assert (handoff in steps) is not one_agent
    assert [s["payload"]["name"] for s in steps if s["pattern"] == "tool:call"] == [
        "get_weather",
        "get_weather",
        "get_alerts",
    ]
    assert case.assertions[3] == {
        "type": "tool.calledWith",
        "name": "get_alerts",
        "args": {"city": "Paris"},
        "status": "ok" if loop else "error",
    }
    assert all(verdicts(case, t).values())


@pytest.mark.parametrize("name", WITH_TOOLS)
def test_a_wrong_argument_fails_the_drafted_case(name: str) -> None:
    t = import_trace(FIXTURES / name)
    case = draft_case(t, "c")

    def rome_to_berlin(signals: list[Signal]) -> None:
        call = next(s for s in tool_calls(signals) if s.payload["input"] == {"city": "Rome"})
        call.payload["input"] = {"city": "Berlin"}

    got = verdicts(case, mutated(t, rome_to_berlin))
    assert got["tool.calledWith"] is False
    assert got["signal.trajectory"] and got["output.contains"]  # only the argument changed


@pytest.mark.parametrize("name", WITH_TOOLS)
def test_a_reversed_order_fails_the_drafted_case(name: str) -> None:
    t = import_trace(FIXTURES / name)
    case = draft_case(t, "c")

    def reverse_tools(signals: list[Signal]) -> None:
        calls = tool_calls(signals)
        payloads = [c.payload for c in calls][::-1]
        for call, payload in zip(calls, payloads, strict=True):
            call.payload = payload

    got = verdicts(case, mutated(t, reverse_tools))
    assert got["signal.trajectory"] is False
    assert got["tool.calledWith"]  # the same calls, arguments and results: only the order


@pytest.mark.parametrize("name", SIMPLE)
def test_a_trace_without_tools_fails_when_a_tool_is_called_or_another_agent_runs(
    name: str,
) -> None:
    t = import_trace(FIXTURES / name)
    case = draft_case(t, "c")
    assert all(verdicts(case, t).values())

    def call_a_tool(signals: list[Signal]) -> None:
        signals.insert(2, Signal("tool:call", {"id": "x", "name": "search", "input": {}}))

    def other_agent(signals: list[Signal]) -> None:
        next(s for s in signals if s.name == "agent:activated").payload = {"agent": "billing"}

    assert verdicts(case, mutated(t, call_a_tool))["signal.not"] is False
    assert verdicts(case, mutated(t, other_agent))["signal.trajectory"] is False


def test_a_mutated_trace_fails_the_run(tmp_path: Path) -> None:
    """End to end: the case drafted from a trace, run on a trace with a wrong argument."""
    (tmp_path / "traces").mkdir()
    fixture = (FIXTURES / "langgraph_events.jsonl").read_text(encoding="utf-8")
    (tmp_path / "traces" / "weather.jsonl").write_text(fixture, encoding="utf-8")
    assert (
        cli("import", "traces/weather.jsonl", "--case-into", "d.yaml", cwd=tmp_path).returncode == 0
    )
    wrong = fixture.replace('"city": "Rome"', '"city": "Berlin"')
    assert wrong != fixture
    (tmp_path / "traces" / "weather.jsonl").write_text(wrong, encoding="utf-8")
    run = cli("run", "d.yaml", "--traces", "traces", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "0 passed, 1 failed" in run.stdout and "tool.calledWith" in run.stdout


def test_arguments_that_read_as_matchers_are_left_out_and_text_arguments_kept(
    tmp_path: Path,
) -> None:
    t = trace(
        ("harness:start", {"input": {"ticket": 7}}),
        sig("provider:start", {}, id="p"),
        sig(
            "tool:call",
            {
                "id": "a",
                "name": "find",
                "input": {"q": {"contains": "x"}, "ids": [{"lt": 1}], "n": 2},
            },
            parent="p",
        ),
        ("tool:result", {"id": "a", "name": "find", "result": "r"}),
        ("tool:call", {"id": "b", "name": "raw", "input": "not json {"}),
        ("text:complete", {"content": "done"}),
        input={"ticket": 7},
    )
    case = draft_case(t, "c")
    assert {
        "type": "tool.calledWith",
        "name": "find",
        "args": {"n": 2},
        "status": "ok",
    } in case.assertions
    assert {
        "type": "signal.contains",
        "pattern": "tool:call",
        "payload": {"name": "raw", "input": "not json {"},
    } in case.assertions
    assert case.input == {"ticket": 7}
    assert all(verdicts(case, t).values())
    # and it is a valid case of a dataset (the schema accepts what was drafted)
    path = tmp_path / "t.jsonl"
    write_jsonl(list(t), path)
    (written,) = import_cases([path], tmp_path / "d.yaml")
    assert load_dataset(tmp_path / "d.yaml").cases[0].assertions == written.assertions


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_text_cut_inside_a_surrogate_pair_is_drafted_as_a_dataset_can_hold_it(
    suffix: str, tmp_path: Path
) -> None:
    """A model's stream cut inside an emoji leaves half a pair, which a dataset refuses:
    import --case-into ended in a traceback for a .json dataset and wrote a .yaml one
    that no longer loaded. The values holding one are left out, the answer is checked by
    its longest whole part, the input gets U+FFFD (and so does a file name's byte that is
    not UTF-8, in the case id)."""
    cut = "\ud83d"
    t = trace(
        ("harness:start", {"input": f"hi {cut}"}),
        ("agent:activated", {"agent": f"a{cut}"}),
        sig("provider:start", {}, id="p"),
        sig("tool:call", {"id": "a", "name": "find", "input": {"q": cut, "n": 2}}, parent="p"),
        sig("tool:call", {"id": "b", "name": f"f{cut}", "input": {}}, parent="p"),
        ("agent:error", {"agent": "b", "error": f"boom {cut}"}),
        ("text:complete", {"content": f"sunny {cut} today, warm"}),
        input=f"hi {cut}",
    )
    path = tmp_path / os.fsdecode(b"t\xff.jsonl")  # a name not in UTF-8: its id too
    write_jsonl(list(t), path)
    (case,) = import_cases([path], tmp_path / f"d{suffix}")
    assert load_dataset(tmp_path / f"d{suffix}").cases == [case]
    assert (case.id, case.input) == ("t\ufffd", "hi \ufffd")
    assert {"type": "output.contains", "text": " today, warm"} in case.assertions
    assert {"type": "tool.calledWith", "name": "find", "args": {"n": 2}} in case.assertions
    assert all(verdicts(case, t).values())


# -- appending keeps the user's file ---------------------------------------------------


def inserted_only(old: str, new: str) -> str:
    """The text ``new`` adds to ``old`` in one place; fails if any old byte changed."""
    k = 0
    while k < len(old) and old[k] == new[k]:
        k += 1
    tail = len(old) - k
    assert new[len(new) - tail :] == old[k:], "the old text after the insertion changed"
    return new[k : len(new) - tail]


USER_YAML = """\
# Support evals (hand-written: keep my comments)
name: support   # the team's name
description: >
  Folded text
  kept as written.
cases:
    -   id: greet        # the first case
        input: "Hi"
        assertions:
          - {type: output.contains, text: hello, caseSensitive: false}
    -   id: refund
        input: &refund_input
          order: 42
        assertions: [{type: tool.called, name: refund}]
    # - id: disabled, left here on purpose
defaultAssertions:
  - {type: output.length, min: 1}
"""


def test_append_keeps_every_byte_of_the_users_yaml(tmp_path: Path) -> None:
    path = tmp_path / "evals.yaml"
    path.write_text(USER_YAML, encoding="utf-8")
    (case,) = import_cases([FIXTURES / "agents_support.json"], path)
    new = path.read_text(encoding="utf-8")
    inserted_only(USER_YAML, new)
    at = new.index("\n    - id: agents_support\n")  # at the list's indentation
    assert new.index("[{type: tool.called, name: refund}]") < at < new.index("# - id: disabled")
    data = yaml.safe_load(new)
    assert [c["id"] for c in data["cases"]] == ["greet", "refund", "agents_support"]
    assert data["cases"][2] == case.to_data()
    assert data["defaultAssertions"] == [{"type": "output.length", "min": 1}]


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "name": "j",\n  "cases": [\n    {"id": "a", "assertions": []}\n  ]\n}\n',
        '{"name": "j", "cases": []}',
        "name: j\ncases: []\n",
        "name: j\ncases: [{id: a, assertions: []}]",
        "name: j\ncases:\n- id: a\n  assertions: []",  # no final newline
        "name: j\r\ncases:\r\n  - id: a\r\n    assertions: []\r\n",
        "\ufeffname: j\ncases:\n  - id: a\n    assertions: []\n",
        "name: j\ncases:\n- id: a\n  assertions: []\n  input: |+\n    kept\n\n\n",
    ],
    ids=["json", "json-empty", "flow-empty", "flow", "no-newline", "crlf", "bom", "keep-chomp"],
)
def test_append_to_every_shape_of_list(text: str, tmp_path: Path) -> None:
    path = tmp_path / ("d.json" if text.startswith("{") else "d.yaml")
    path.write_bytes(text.encode())
    before = yaml.safe_load(text.lstrip("\ufeff"))
    (case,) = import_cases([FIXTURES / "agents_simple.json"], path)
    new = path.read_bytes().decode()
    inserted_only(text, new)
    if path.suffix == ".json":
        json.loads(new)
    assert yaml.safe_load(new.lstrip("\ufeff")) == {
        **before,
        "cases": [*before["cases"], case.to_data()],
    }
    assert load_dataset(path).cases[-1].id == "agents_simple"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-32-be"])
def test_append_keeps_a_utf16_or_utf32_file_in_its_encoding(codec: str, tmp_path: Path) -> None:
    """A dataset saved as UTF-16 with a mark now loads; appending to it wrote it back as
    UTF-8 (or would have crashed decoding it as UTF-8)."""
    text = "\ufeffname: j # é\ncases:\n  - id: a\n    assertions: []\n"
    path = tmp_path / "d.yaml"
    path.write_bytes(text.encode(codec))
    (case,) = import_cases([FIXTURES / "agents_simple.json"], path)
    new = path.read_bytes().decode(codec)
    inserted_only(text, new)
    assert [c.id for c in load_dataset(path).cases] == ["a", case.id]


def test_a_taken_id_gets_a_suffix_and_the_cli_says_how_to_name_the_trace(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_bytes((FIXTURES / "agents_simple.json").read_bytes())
    first = cli("import", "t.json", "--case-into", "d.yaml", cwd=tmp_path)
    assert first.stdout.strip() == "appended case 't' to d.yaml (3 assertions)"
    again = cli("import", "t.json", "--case-into", "d.yaml", cwd=tmp_path)
    assert "appended case 't-2' to d.yaml" in again.stdout
    assert "name the trace DIR/t-2.json" in again.stdout


def test_missing_file_is_created_as_a_dataset_and_ids_stay_unique(tmp_path: Path) -> None:
    path = tmp_path / "evals" / "new.yaml"
    first = import_cases([FIXTURES / "agents_simple.json"], path)
    again = import_cases([FIXTURES / "agents_simple.json", FIXTURES / "agents_simple.json"], path)
    dataset = load_dataset(path)
    assert dataset.name == "new"
    assert [c.id for c in first + again] == ["agents_simple", "agents_simple-2", "agents_simple-3"]
    assert [c.id for c in dataset.cases] == ["agents_simple", "agents_simple-2", "agents_simple-3"]
    import_cases([FIXTURES / "agents_simple.json"], tmp_path / "new.json")
    assert json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))["name"] == "new"


def test_appends_at_once_to_one_dataset_each_keep_their_case(tmp_path: Path) -> None:
    """'import t.json --case-into d.yaml &' in a loop: each command read the file before
    another wrote it back, and all but one of the cases were lost (here 7 of 8, the file
    and its folder made by whichever came first)."""
    import threading

    from signal_eval_cli.dataset_append import append_cases

    path = tmp_path / "new" / "d.yaml"
    check = [{"type": "signal.not", "pattern": "error:*"}]
    cases = [EvalCase(id=f"c{i}", input=None, assertions=check) for i in range(8)]
    together = threading.Barrier(len(cases))

    def append(case: EvalCase) -> None:
        together.wait(30)
        append_cases(path, [case])

    threads = [threading.Thread(target=append, args=(case,)) for case in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(c.id for c in load_dataset(path).cases) == [c.id for c in cases]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("foo: 1\n", r"d.yaml:1:1: unknown field 'foo'"),
        ("name: x\ncases:\n  - id: a\n    assertions: [\n", r"d.yaml:5:1: invalid YAML"),
        (
            "name: x\ncases:\n  - {id: a, assertions: [{type: nope}]}\n",
            r"d.yaml:3:\d+: unknown assertion type 'nope'",
        ),
        (
            "name: x\ncases:\n  - {id: a, assertions: []}\n  - {id: a, assertions: []}\n",
            r"d.yaml:4:\d+: duplicate case id 'a'",
        ),
        (
            "metadata:\n  all: &c\n    - {id: a, assertions: []}\nname: x\ncases: *c\n",
            r"d.yaml:2:\d+: cannot append a case to this 'cases' list",
        ),
    ],
    ids=["not-a-dataset", "broken-yaml", "bad-assertion", "duplicate-id", "alias"],
)
def test_a_file_that_is_not_a_dataset_is_refused_located_and_left_alone(
    text: str, where: str, tmp_path: Path
) -> None:
    import re

    path = tmp_path / "d.yaml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "t.json").write_bytes((FIXTURES / "agents_simple.json").read_bytes())
    result = cli("import", "t.json", "--case-into", "d.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(where, result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert path.read_text(encoding="utf-8") == text
    with pytest.raises(InputError):
        import_cases([tmp_path / "t.json"], path)


def test_a_bad_trace_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"data": [', encoding="utf-8")
    result = cli("import", "t.json", "--case-into", "d.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "t.json:1:" in result.stderr
    assert not (tmp_path / "d.yaml").exists()


def test_traces_given_a_file_says_it_wants_the_directory(tmp_path: Path) -> None:
    """``--traces trace.json`` said "traces directory not found" of a file that exists."""
    from signal_eval_cli.errors import InputError
    from signal_eval_cli.harness.recorded import RecordedTraces

    trace = tmp_path / "a.json"
    trace.write_text("{}")
    with pytest.raises(InputError, match="is a file: --traces takes the directory"):
        RecordedTraces(trace, ["a"])
    with pytest.raises(InputError, match="traces directory not found"):
        RecordedTraces(tmp_path / "none", ["a"])


@pytest.mark.parametrize("name", sorted(FAILED_RUNS))
def test_a_case_drafted_from_a_failed_run_states_the_failure(name: str) -> None:
    """Each failure (an agent's error, a refused model call) is an assertion: the case
    passes on its trace and fails on the same run without the failure."""
    t = import_trace(FIXTURES / name)
    case = draft_case(t, "c")
    failures = [s for s in t if s.name in ("agent:error", "provider:error")]
    stated = [a for a in case.assertions if a.get("pattern") in ("agent:error", "provider:error")]
    assert failures and len(stated) == len({json.dumps(a) for a in stated})
    assert {(a["pattern"], a["payload"].get("agent")) for a in stated} == {
        (s.name, s.payload.get("agent")) for s in failures
    }
    assert all(verdicts(case, t).values())

    def went_well(signals: list[Signal]) -> None:
        signals[:] = [s for s in signals if s.name not in ("agent:error", "provider:error")]

    assert verdicts(case, mutated(t, went_well))["signal.contains"] is False


def test_a_case_drafted_from_a_run_that_went_well_states_no_failure() -> None:
    case = draft_case(import_trace(FIXTURES / "agents_support.json"), "c")
    assert not [a for a in case.assertions if a["type"] == "signal.contains"]
