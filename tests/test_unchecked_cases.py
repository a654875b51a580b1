"""A case written ``assertions: []`` with no ``defaultAssertions`` checks nothing but that
its harness ran: it keeps the reference's verdict (a pass), and every command that reads
the dataset says so once per file on stderr, at the first such case, never silently.
In-process (CliRunner): the harness is a few lines and each run takes milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signal_eval_cli.cli import app

HARNESS = """\
def create():
    def run(input, ctx):
        if input == "raise":
            raise ValueError("boom")
        ctx.emit("text:complete", {"content": input})
    return run
"""

DATASET = """\
name: d
harness: h.py:create
cases:
  - id: checked
    input: fine
    assertions: [{type: output.contains, text: fine}]
  - id: bare
    input: anything
    assertions: []
  - id: later
    skip: true
    assertions: []
  - id: also-bare
    input: anything
    assertions: []
"""

WARNING = (
    "d.yaml:7:5: warning: 2 of 4 cases (the first 'bare') have 'assertions: []' and the "
    "dataset no 'defaultAssertions': they pass whatever the harness answers, checking only "
    "that it returns signals without raising or timing out (with --traces: that the trace "
    "reads)"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "h.py").write_text(HARNESS)
    (tmp_path / "d.yaml").write_text(DATASET)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "d.yaml", "m.yaml"],  # the matrix's dataset: the same file, said again
        ["run", "d.yaml", "-q", "-o", "out.json"],
        ["matrix", "m.yaml", "-q"],
    ],
)
def test_every_command_says_once_per_file_what_such_cases_check(
    project: Path, args: list[str]
) -> None:
    (project / "m.yaml").write_text("dataset: d.yaml\nvariants: [{id: v, name: V}]\n")
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output  # the verdict is the reference's: they pass
    lines = done.stderr.splitlines()
    assert lines.count(WARNING) == args.count("d.yaml") + args.count("m.yaml")
    assert "Traceback" not in done.stderr
    if args[0] == "run":
        saved = json.loads((project / "out.json").read_text())
        assert [c["passed"] for c in saved["cases"]] == [True, True, True, True]


def test_one_such_case_is_spoken_of_in_the_singular(tmp_path: Path) -> None:
    from signal_eval_cli import load_dataset

    path = tmp_path / "d.yaml"
    path.write_text("name: d\ncases:\n  - id: bare\n    input: x\n    assertions: []\n")
    (notice,) = load_dataset(path).notices
    assert (
        "case 'bare' has 'assertions: []' and the dataset no 'defaultAssertions': it passes "
        in (notice.message)
    )


def test_such_a_case_still_fails_when_its_harness_raises(project: Path) -> None:
    (project / "d.yaml").write_text(DATASET.replace("input: anything", "input: raise"))
    done = CliRunner().invoke(app, ["run", "d.yaml", "-q", "--table", "all"])
    assert done.exit_code == 1, done.output
    assert done.stdout.count("ValueError: boom") == 2
    assert "1 passed, 2 failed, 1 skipped" in done.stdout


@pytest.mark.parametrize(
    "dataset",
    [
        DATASET.replace(
            "cases:", "defaultAssertions: [{type: signal.not, pattern: 'error:*'}]\ncases:"
        ),
        "name: d\nharness: h.py:create\ncases:\n  - {id: a, skip: true, assertions: []}\n"
        "  - {id: b, assertions: [{type: signal.not, pattern: 'error:*'}]}\n",
    ],
    ids=["defaults-reach-them", "only-a-skipped-one"],
)
def test_no_warning_when_every_case_that_runs_checks_something(project: Path, dataset: str) -> None:
    (project / "d.yaml").write_text(dataset)
    done = CliRunner().invoke(app, ["validate", "d.yaml"])
    assert done.exit_code == 0, done.output
    assert done.stderr == ""
