"""Scenario files: loading, validation with located errors, goal resolution, lookup."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli.errors import InputError, UnknownAssertionType
from signal_eval_cli.scenarios import (
    find_scenarios,
    load_scenario,
    parse_scenario,
    run_scenario,
)
from signal_eval_cli.scenarios.model import Scenario
from signal_eval_cli.validate import validate_path

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"


def minimal(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "demo",
        "adapterId": "python-pytest",
        "goals": ["test"],
        "fixture": {"path": "fx"},
    }
    data.update(extra)
    return data


def write(tmp_path: Path, data: dict[str, Any], name: str = "demo.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_scenario(path)
    return [str(p) for p in info.value.problems]


# -- the shipped scenarios ------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.*")), ids=lambda p: p.name)
def test_every_shipped_scenario_validates(path: Path) -> None:
    assert validate_path(path) == ("scenario", [])
    scenario = load_scenario(path)
    assert (REPO / scenario.fixture.path).is_dir()
    assert any(a["type"] == "diff-match" for a in scenario.pattern_assertions)


def test_backend_api_opt_is_the_seed_scenario() -> None:
    scenario = load_scenario(SCENARIOS / "backend-api-opt.json")
    assert scenario.id == "backend-api-opt"
    assert scenario.adapter_id == "typescript-default"
    assert [(g.goal, g.command, g.args) for g in scenario.goals] == [
        ("test", "npm", ("run", "test"))
    ]
    assert scenario.fixture.path == "fixtures/node-api-nplus1" and scenario.fixture.copy_to_temp
    assert scenario.agent_task is not None
    [op] = scenario.agent_task.ops
    assert op.path == "src/routes/users.js"
    assert "db.getAllPosts()" in op.contents and "getPostsForUser" not in op.contents
    diff = next(a for a in scenario.pattern_assertions if a["type"] == "diff-match")
    assert diff["expectedDiff"].startswith("@@ ... @@\n-")  # seed style: no context after @@


def test_json_and_yaml_load_to_the_same_scenario(tmp_path: Path) -> None:
    data = minimal(
        title="T",
        agentTask={"instruction": "WRITE|a.txt|x | y\n"},
        patternAssertions=[{"type": "file-contains", "path": "a.txt", "includes": "x"}],
    )
    from_json = load_scenario(write(tmp_path, data))
    yaml_text = (
        "id: demo\ntitle: T\nadapterId: python-pytest\ngoals: [test]\nfixture: {path: fx}\n"
        "agentTask:\n  instruction: |\n    WRITE|a.txt|x | y\npatternAssertions:\n"
        "  - {type: file-contains, path: a.txt, includes: x}\n"
    )
    (tmp_path / "demo.yaml").write_text(yaml_text)
    from_yaml = load_scenario(tmp_path / "demo.yaml")
    for field in ("id", "title", "adapter_id", "goals", "fixture", "agent_task"):
        assert getattr(from_json, field) == getattr(from_yaml, field)
    assert from_json.pattern_assertions == from_yaml.pattern_assertions


# -- unknown types fail loudly, located, with the scenario id -------------------------------------


def test_unknown_pattern_assertion_type_names_scenario_source_and_suggestion(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        minimal(patternAssertions=[{"type": "diff-mach", "path": "a", "expectedDiff": ""}]),
    )
    [message] = problems(path)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: ", message)
    assert "scenario 'demo'" in message and str(path) in message.split(": ", 1)[1]
    assert "unknown pattern assertion type 'diff-mach' — did you mean 'diff-match'?" in message
    assert "(known: file-exists, file-contains, diff-match)" in message


def test_error_points_at_the_type_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "id: demo\nadapterId: python-pytest\ngoals: [test]\nfixture: {path: fx}\n"
        "patternAssertions:\n  - type: file-exits\n    path: a.txt\n"
    )
    [message] = problems(path)
    assert message.startswith(f"{path}:6:11: scenario 'demo'")
    assert "did you mean 'file-exists'?" in message


def test_types_in_the_wrong_list_are_explained(tmp_path: Path) -> None:
    data = minimal(
        patternAssertions=[{"type": "signal.count", "pattern": "goal:end"}],
        assertions=[{"type": "file-exists", "path": "a"}],
    )
    messages = problems(write(tmp_path, data))
    assert len(messages) == 2
    assert "'signal.count' belongs under 'assertions'" in messages[0]
    assert "'file-exists' belongs under 'patternAssertions'" in messages[1]


def test_unknown_trace_assertion_type_is_rejected_too(tmp_path: Path) -> None:
    data = minimal(assertions=[{"type": "signal.cuont", "pattern": "x"}])
    [message] = problems(write(tmp_path, data))
    assert "scenario 'demo'" in message and "did you mean 'signal.count'?" in message


def test_an_inline_scenario_with_an_unknown_type_throws_at_run_time(tmp_path: Path) -> None:
    scenario = parse_scenario(minimal())
    scenario.pattern_assertions.append({"type": "diff-matches", "path": "a"})
    with pytest.raises(UnknownAssertionType, match="did you mean 'diff-match'"):
        import asyncio

        asyncio.run(run_scenario(scenario, root=tmp_path))


def test_parse_scenario_validates_inline_data() -> None:
    with pytest.raises(InputError, match="unknown pattern assertion type 'nope'"):
        parse_scenario(minimal(patternAssertions=[{"type": "nope"}]))


# -- other problems found at load time -------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"adapterId": "typescript-defualt"}, "did you mean 'typescript-default'?"),
        ({"goals": ["tset"]}, "unknown goal 'tset' for adapter 'python-pytest' — did you mean"),
        ({"goals": ["test", "test"]}, "goal 'test' is listed twice"),
        ({"overrides": {"bulid": {"timeoutMs": 5}}}, "which the scenario does not run"),
        ({"agentTask": {"instruction": "EDIT|a|b"}}, "unknown agentTask verb 'EDIT'"),
        ({"agentTask": {"instruction": "WRITE|../a|b"}}, "contains '..'"),
        ({"agentTask": {"instruction": ["WRITE|a|b", "WRITE|/a|b"]}}, "is absolute"),
        (
            {"patternAssertions": [{"type": "file-exists", "path": "../up"}]},
            "file-exists: path '../up' contains '..'",
        ),
        ({"fixture": {"path": "fx", "copy": True}}, "unknown field 'copy'"),
        ({"goals": [{"goal": "test", "timeoutMs": -1}]}, "timeoutMs"),
        (
            {"patternAssertions": [{"type": "diff-match", "path": "a"}]},
            "missing required field 'expectedDiff'",
        ),
        (
            {
                "patternAssertions": [
                    {"type": "diff-match", "path": "a", "expectedDiff": "", "match": "x"}
                ]
            },
            "'match'",
        ),
    ],
)
def test_problems_are_located_input_errors(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    messages = problems(write(tmp_path, minimal(**change)))
    assert any(expected in m for m in messages), messages
    assert all(re.match(r".+:\d+:\d+: ", m) for m in messages), messages


def test_missing_required_fields(tmp_path: Path) -> None:
    messages = problems(write(tmp_path, {"id": "x", "adapterId": "go-module"}))
    assert any("missing required field 'goals'" in m for m in messages)
    assert any("missing required field 'fixture'" in m for m in messages)


# -- goals ---------------------------------------------------------------------------------------


def test_goal_resolution_adapter_then_overrides_then_the_goal_itself() -> None:
    scenario = parse_scenario(
        minimal(
            goals=[
                "build",
                {"goal": "test", "args": ["-m", "pytest", "-x"], "env": {"B": "goal"}},
                {"goal": "custom", "command": "make", "args": ["{fixture}"], "cwd": "sub"},
            ],
            overrides={
                "test": {"timeoutMs": 5000, "env": {"A": "override", "B": "override"}},
                "build": {"cwd": "{fixture}/pkg"},
            },
        )
    )
    build, test, custom = scenario.goals
    assert (build.command, build.args) == (
        "{python}",
        ("-m", "pip", "install", "-r", "requirements.txt"),
    )
    assert build.cwd == "{fixture}/pkg" and build.timeout_ms == 30_000
    assert build.only_if_exists == "requirements.txt"
    assert (test.command, test.args, test.timeout_ms) == ("{python}", ("-m", "pytest", "-x"), 5000)
    assert test.env["A"] == "override" and test.env["B"] == "goal"
    assert test.env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert (custom.command, custom.args, custom.cwd, custom.toolchain) == (
        "make",
        ("{fixture}",),
        "sub",
        None,
    )


@pytest.mark.parametrize(
    ("adapter", "goal", "argv"),
    [
        ("typescript-default", "build", ["npm", "run", "build"]),
        ("typescript-default", "test", ["npm", "run", "test"]),
        ("typescript-default", "lint", ["npm", "run", "lint"]),
        ("python-pytest", "test", [sys.executable, "-m", "pytest", "-q"]),
        ("go-module", "build", ["go", "build", "./..."]),
        ("go-module", "test", ["go", "test", "./..."]),
        ("go-module", "vet", ["go", "vet", "./..."]),
    ],
)
def test_adapter_commands(adapter: str, goal: str, argv: list[str]) -> None:
    [resolved] = parse_scenario(minimal(adapterId=adapter, goals=[goal])).goals
    command = [resolved.command, *resolved.args]
    assert [part.replace("{python}", sys.executable) for part in command] == argv


def test_an_override_with_a_command_makes_any_goal_name_valid() -> None:
    scenario = parse_scenario(minimal(goals=["deploy"], overrides={"deploy": {"command": "true"}}))
    assert scenario.goals[0].command == "true"


# -- lookup by id or path ----------------------------------------------------------------------


def _scenario_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "scenarios"
    directory.mkdir()
    write(directory, minimal(id="alpha"), "alpha.json")
    write(directory, minimal(id="beta"), "named-differently.json")
    (directory / "notes.txt").write_text("ignored")
    return directory


def test_find_by_id_by_path_and_all(tmp_path: Path) -> None:
    directory = _scenario_dir(tmp_path)
    ids = [s.id for s in find_scenarios(["beta", "alpha"], directory=directory)]
    assert ids == ["beta", "alpha"]
    by_path = find_scenarios([str(directory / "alpha.json")], directory=tmp_path / "x")
    assert [s.id for s in by_path] == ["alpha"]
    everything = find_scenarios([], directory=directory, include_all=True)
    assert sorted(s.id for s in everything) == ["alpha", "beta"]


def test_unknown_id_suggests_a_known_one(tmp_path: Path) -> None:
    directory = _scenario_dir(tmp_path)
    with pytest.raises(InputError) as info:
        find_scenarios(["alpah"], directory=directory)
    [problem] = info.value.problems
    assert "no scenario with id 'alpah' — did you mean 'alpha'?" in str(problem)


def test_duplicate_ids_are_an_input_error(tmp_path: Path) -> None:
    directory = _scenario_dir(tmp_path)
    write(directory, minimal(id="alpha"), "alpha-again.json")
    with pytest.raises(InputError, match="duplicate scenario id 'alpha'"):
        find_scenarios([], directory=directory, include_all=True)


def test_diff_paths_are_unique_and_ordered() -> None:
    scenario: Scenario = parse_scenario(
        minimal(
            patternAssertions=[
                {"type": "diff-match", "path": "b", "expectedDiff": "x"},
                {"type": "file-exists", "path": "z"},
                {"type": "diff-match", "path": "a", "expectedDiff": "x", "scope": "repo"},
                {"type": "diff-match", "path": "b", "expectedDiff": "y", "match": "exact"},
            ]
        )
    )
    assert scenario.diff_paths() == [("fixture", "b"), ("repo", "a")]


# -- unknown top-level fields ------------------------------------------------------------------------

REFERENCE_EXTRAS = {
    "description": "held out",
    "mode": "agent",
    "category": "api",
    "tags": ["perf"],
    "timeoutMs": 600000,
    "metadata": {"owner": "x"},
    "difficulty": 3,
    "kind": "coding",
    "notes": ["free", "form"],
}


def test_reference_extra_top_level_fields_are_allowed(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(**REFERENCE_EXTRAS))
    (tmp_path / "fx").mkdir()  # validate checks the fixture exists too
    assert validate_path(path) == ("scenario", [])
    assert load_scenario(path).id == "demo"
    parse_scenario(minimal(**REFERENCE_EXTRAS))


@pytest.mark.parametrize(
    ("typo", "known"),
    [
        ("titel", "title"),
        ("Tags", "tags"),
        ("metdata", "metadata"),
        ("patternAssertion", "patternAssertions"),
        ("asertions", "assertions"),
        ("agentTsk", "agentTask"),
        ("overide", "overrides"),
        ("ID", "id"),
    ],
)
def test_a_top_level_typo_of_a_known_field_is_still_an_error(
    tmp_path: Path, typo: str, known: str
) -> None:
    path = write(tmp_path, minimal(**REFERENCE_EXTRAS, **{typo: "x"}))
    row = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if f'"{typo}"' in line)
    assert problems(path) == [f"{path}:{row}:3: unknown field '{typo}' — did you mean '{known}'?"]
    assert validate_path(path)[0] == "invalid"
    with pytest.raises(InputError, match=f"did you mean '{known}'"):
        parse_scenario(minimal(**{typo: "x"}))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"goals": [{"goal": "test", "mode": "x"}]}, "mode"),
        ({"overrides": {"test": {"category": "x"}}}, "category"),
        ({"fixture": {"path": "fx", "tags": []}}, "tags"),
        ({"agentTask": {"instruction": "WRITE|a|b", "description": "x"}}, "description"),
        ({"patternAssertions": [{"type": "file-exists", "path": "a", "mode": "x"}]}, "mode"),
        (
            {
                "patternAssertions": [
                    {"type": "file-contains", "path": "a", "includes": "b", "x": 1}
                ]
            },
            "x",
        ),
        (
            {
                "patternAssertions": [
                    {"type": "diff-match", "path": "a", "expectedDiff": "", "y": 1}
                ]
            },
            "y",
        ),
    ],
)
def test_nested_objects_stay_strict(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    messages = problems(write(tmp_path, minimal(**change)))
    assert any(f"unknown field '{field}'" in m for m in messages), messages


def test_a_scenario_that_checks_nothing_is_refused(tmp_path: Path) -> None:
    """``goals: []`` with no assertions passed whatever the agent did, as a case with no
    assertions would (which a dataset refuses): located at the goals."""
    (tmp_path / "fx").mkdir()
    path = tmp_path / "s.yaml"
    head = "id: s\nadapterId: python-pytest\nfixture: {path: fx}\ngoals: []\n"
    path.write_text(head)
    _, problems = validate_path(path)
    assert [(p.line, p.column) for p in problems] == [(4, 8)]
    assert "nothing would be checked" in problems[0].message
    path.write_text(head + "assertions: [{type: signal.not, pattern: 'error:*'}]\n")
    assert validate_path(path) == ("scenario", [])
