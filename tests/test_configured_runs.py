"""A matrix and a scenario run in one library call give what their commands give
(``configured_runs``). The commands run in process (``CliRunner``): no subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from flows_helpers import project_copy
from test_run_config import without_timings
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.configured_runs import run_matrix_configured, run_scenarios_configured
from signal_eval_cli.errors import InputError
from signal_eval_cli.persistence import save_result
from signal_eval_cli.run_config import ProviderPolicy
from signal_eval_cli.scenarios import load_scenario
from signal_eval_cli.validate import validate_path


def _same_as_the_command(result: object, command: list[str], project: Path) -> None:
    save_result(result, project / "lib.json")  # type: ignore[arg-type]
    done = CliRunner().invoke(app, [*command, "-q", "-o", str(project / "cli.json")])
    assert done.exit_code in (0, 1), done.output
    from_cli = json.loads((project / "cli.json").read_text())
    from_library = json.loads((project / "lib.json").read_text())
    assert without_timings(from_library) == without_timings(from_cli)


def test_a_matrix_in_one_call_is_the_matrix_command_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_copy(tmp_path)
    monkeypatch.chdir(project)
    notes: list[str] = []
    policy = ProviderPolicy(replay=True, note=notes.append)
    matrix = project / "datasets/matrix-code-review.yaml"
    result = asyncio.run(run_matrix_configured(matrix, policy))
    assert [v.variant_id for v in result.variants] == [
        "detailed-prompt",
        "concise-prompt",
        "haiku-model",
    ]
    assert result.recommendation is not None and not result.interrupted
    _same_as_the_command(result, ["matrix", str(matrix)], project)
    with pytest.raises(InputError, match="choose one of --record, --replay"):
        asyncio.run(run_matrix_configured(matrix, ProviderPolicy(record=True, replay=True)))


def test_scenarios_in_one_call_are_the_scenario_command_s(tmp_path: Path) -> None:
    from journal_helpers import scenario_essence
    from test_scenarios_cli import greet_scenario, write_json

    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "greet.py").write_text('def greet(name):\n    return "hi " + name\n')
    (tmp_path / "scenarios").mkdir()
    first, second = tmp_path / "scenarios" / "greet.json", tmp_path / "scenarios" / "two.json"
    write_json(first, greet_scenario())
    write_json(second, greet_scenario(id="two"))
    notes: list[str] = []
    run = asyncio.run(
        run_scenarios_configured(
            [load_scenario(second), str(first)],  # a loaded scenario, a file: in that order
            ProviderPolicy(note=notes.append),
            root=tmp_path,
        )
    )
    assert [s.id for s in run.scenarios] == ["two", "greet"] and run.passed
    assert notes == []  # no model call: nothing recorded, nothing missed
    save_result(run, tmp_path / "lib.json")
    done = CliRunner().invoke(
        app,
        [
            "scenario",
            str(second),
            str(first),
            "--root",
            str(tmp_path),
            "-q",
            "-o",
            str(tmp_path / "cli.json"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert scenario_essence(tmp_path / "lib.json") == scenario_essence(tmp_path / "cli.json")
    with pytest.raises(InputError, match="choose one of --record, --live"):
        asyncio.run(run_scenarios_configured([str(first)], ProviderPolicy(record=True, live=True)))


@pytest.mark.parametrize(
    ("variant", "where", "says"),
    [
        ('{id: a, name: A, harness: "nofile.py:create"}', "m.yaml:3:31:", "file not found"),
        ("{id: a, name: A, params: {nosuch: 1}}", "m.yaml:3:30:", "does not take params"),
        ("{id: a, name: A}", "m.yaml:3:5:", "the factory raised ValueError: no"),
    ],
    ids=["missing-file", "unknown-param", "factory-raises"],
)
def test_a_variant_that_cannot_be_built_is_located_leaves_no_journal_and_fails_validate(
    tmp_path: Path, variant: str, where: str, says: str
) -> None:
    _variant_matrix(tmp_path, variant)
    output = tmp_path / "out.json"
    with pytest.raises(InputError) as caught:
        asyncio.run(run_matrix_configured(tmp_path / "m.yaml", output=output))
    (problem,) = caught.value.problems
    assert str(problem).startswith(str(tmp_path / where)) and says in str(problem), problem
    assert "variant 'a'" in str(problem)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.yaml", "h.py", "m.yaml"]
    if "raised" not in says:  # validate builds nothing: what it can see without running
        kind, problems = validate_path(tmp_path / "m.yaml")
        assert (kind, [str(p) for p in problems]) == ("invalid", [str(problem)])


def _variant_matrix(tmp_path: Path, variant: str) -> None:
    (tmp_path / "h.py").write_text(
        "def create(ok=False):\n"
        "    if not ok:\n"
        "        raise ValueError('no')\n"
        "    return lambda input, ctx: None\n"
    )
    (tmp_path / "d.yaml").write_text(
        "name: d\nharness: h.py:create\ncases:\n  - id: c\n    input: 1\n"
        "    assertions: [{type: signal.contains, pattern: harness:end}]\n"
    )
    (tmp_path / "m.yaml").write_text(
        f"dataset: d.yaml\nvariants:\n  - {variant}\n  - {{id: ok, name: OK, params: {{ok: true}}}}\n"
    )
