"""``signal-eval init``: the starter it writes validates and passes from any directory, it
never overwrites without ``--force``, and its assertions catch a change in the harness.

In-process (the library, and the command through Typer's runner): the README's block runs
the real ``signal-eval init`` and ``run`` in a shell (tests/test_readme_shell.py).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mock_servers import Call, MockLLMServer, Reply
from typer.testing import CliRunner

from signal_eval_cli import RunOptions, load_dataset, run_dataset, validate_path
from signal_eval_cli.cli import app
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.proxy.config import proxy_cassette
from signal_eval_cli.proxy.server import ModelProxy, Upstream
from signal_eval_cli.results import DatasetResult
from signal_eval_cli.starter import DATASET, STARTER, init_project


def run_starter(project: Path, provider: str | None = None, **proxy: Any) -> DatasetResult:
    """The starter's dataset run as ``signal-eval run`` does (with ``proxy``, the
    ``ModelProxy`` arguments, through a model proxy as ``--provider`` runs use)."""
    dataset = load_dataset(project / DATASET)
    assert dataset.harness is not None and dataset.path is not None
    params = {**dataset.harness.params, **({"provider": provider} if provider else {})}
    harness = resolve_harness(dataset.harness.factory, params, dataset_path=dataset.path)
    if not proxy:
        return asyncio.run(run_dataset(harness, dataset, RunOptions()))
    server = ModelProxy(proxy_cassette(dataset), **proxy)
    try:
        return asyncio.run(run_dataset(harness, dataset, RunOptions(proxy=server.start())))
    finally:
        server.stop()
        server.save()


def snapshot(project: Path) -> dict[str, bytes]:
    return {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*") if p.is_file()}


def test_the_starter_validates_and_every_case_passes_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "new" / "proj"  # created, parents too
    written = init_project(project)
    assert written == [project / "agent.py", project / "evals" / "example.yaml"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert validate_path(project / DATASET) == ("dataset", [])
    result = run_starter(project)
    assert [c.case_id for c in result.cases] == ["sunny-paris", "snowy-oslo", "unknown-city"]
    failed = [
        (c.case_id, c.error, [a.message for a in c.assertions if not a.passed])
        for c in result.cases
        if not c.passed
    ]
    assert failed == []
    types = {a.assertion["type"] for c in result.cases for a in c.assertions}
    assert {
        "signal.trajectory",
        "tool.calledWith",
        "output.contains",
        "metric.activations",
    } <= types
    assert list(elsewhere.iterdir()) == []  # nothing written where it was run from


def test_init_prints_what_it_wrote_and_what_to_run_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["init", "my evals"])
    assert done.exit_code == 0, done.output
    dataset = Path("my evals", "evals", "example.yaml")
    assert done.output.splitlines()[:2] == [
        f"wrote {Path('my evals', 'agent.py')}",
        f"wrote {dataset}",
    ]
    assert f"signal-eval validate '{dataset}'" in done.output
    assert f"signal-eval run '{dataset}'" in done.output
    assert snapshot(tmp_path / "my evals") == {str(k): v.encode() for k, v in STARTER.items()}


def test_init_into_the_current_directory_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["init"])
    assert done.exit_code == 0, done.output
    assert "signal-eval run evals/example.yaml" in done.output
    assert (tmp_path / "agent.py").is_file() and (tmp_path / DATASET).is_file()


@pytest.mark.parametrize("existing", ["agent.py", "evals/example.yaml"])
def test_init_never_overwrites_and_force_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n")
    before = snapshot(tmp_path)
    done = CliRunner().invoke(app, ["init", "."])
    assert done.exit_code == 2
    assert f"{existing}: already exists (nothing written; --force overwrites)" in done.output
    assert "Traceback" not in done.output
    assert snapshot(tmp_path) == before  # not even the other file
    done = CliRunner().invoke(app, ["init", ".", "--force"])
    assert done.exit_code == 0, done.output
    assert snapshot(tmp_path) == {str(k): v.encode() for k, v in STARTER.items()}


def test_init_twice_leaves_the_project_byte_for_byte(tmp_path: Path) -> None:
    init_project(tmp_path)
    (tmp_path / "agent.py").write_text("# my agent\n")
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as raised:
        init_project(tmp_path)
    assert [p.file for p in raised.value.problems] == [
        str(tmp_path / "agent.py"),
        str(tmp_path / DATASET),
    ]
    assert snapshot(tmp_path) == before


def _init_on_a_mount(tmp_path: Path, mount: str, where: str, *args: str) -> str:
    """``signal-eval init ARGS`` (the installed CLI) in a mount namespace of its own with a
    tmpfs mounted at ``tmp_path/where`` (``mount``: its options); what it printed on
    stderr. The mount goes with the namespace: nothing is left mounted."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    cli = Path(sys.executable).parent / "signal-eval"
    script = f'mount -t tmpfs -o {mount} none "$1" || exit 99; shift; exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", where, str(cli), "init", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize("force", [False, True])
def test_init_into_a_read_only_folder_writes_nothing(tmp_path: Path, force: bool) -> None:
    """agent.py was written, then evals/example.yaml failed on the read-only folder: the
    project was left half made (with --force, the user's agent.py replaced)."""
    (tmp_path / "evals").mkdir()
    if force:
        (tmp_path / "agent.py").write_text("# my agent\n")
    stderr = _init_on_a_mount(tmp_path, "ro", "evals", ".", *(["--force"] if force else []))
    assert stderr == "evals/example.yaml: Read-only file system (nothing written)"
    assert snapshot(tmp_path) == ({"agent.py": b"# my agent\n"} if force else {})


def test_init_onto_a_full_disk_leaves_no_file_and_no_folder(tmp_path: Path) -> None:
    (tmp_path / "disk").mkdir()
    stderr = _init_on_a_mount(tmp_path, "size=4k", "disk", "disk/proj")  # agent.py fits
    assert stderr == "disk/proj/evals/example.yaml: No space left on device (nothing written)"
    assert list((tmp_path / "disk").iterdir()) == []


def test_a_rename_that_fails_puts_back_what_force_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file is written whole beside its place before any is renamed; should a rename
    still fail (its folder changed under us), the files already replaced come back."""
    for name in STARTER:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"mine: {name}\n")
    before = snapshot(tmp_path)
    renamed: list[str] = []
    real = os.replace

    def second_fails(src: Any, dst: Any) -> None:
        renamed.append(str(dst))
        if len(renamed) == 2:
            raise OSError(16, "Device or resource busy", str(dst))
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(InputError, match="Device or resource busy"):
        init_project(tmp_path, force=True)
    monkeypatch.undo()
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["agent.py", "evals", "example.yaml"]


@pytest.mark.parametrize("force", [False, True])
def test_a_directory_that_is_a_file_is_a_clear_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("notes.txt").write_text("hello\n")
    Path("proj").mkdir()
    Path("proj", "evals").write_text("a file where the folder goes\n")
    for target, blocked in (("notes.txt", "notes.txt"), ("proj", "proj/evals")):
        done = CliRunner().invoke(app, ["init", target, *(["--force"] if force else [])])
        assert done.exit_code == 2, done.output
        assert done.output.strip() == f"{blocked}: is not a directory"
    done = CliRunner().invoke(app, ["init", "notes.txt/proj"])
    assert (done.exit_code, done.output.strip()) == (
        2,
        "notes.txt/proj: Not a directory (nothing written)",
    )
    assert sorted(snapshot(tmp_path)) == ["notes.txt", "proj/evals"]


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        # the tool is not called: the trajectory and the tool checks fail
        (
            (
                'call = {"id": "call-1", "name": "get_weather"}',
                'call = {"id": "call-1", "name": "lookup"}',
            ),
            {
                "sunny-paris": ["signal.trajectory", "tool.calledWith"],
                "snowy-oslo": ["tool.calledWith"],
                "unknown-city": ["tool.calledWith", "tool.failed"],
            },
        ),
        # the forecast is wrong: the output checks fail
        (
            ('"18°C and sunny"', '"18°C and rainy"'),
            {"sunny-paris": ["output.contains"]},
        ),
        # the tool fails silently: its error is lost, the status and failure checks fail
        (
            ('{**call, "error": str(error)}', '{**call, "result": "none"}'),
            {"unknown-city": ["tool.calledWith", "tool.failed"]},
        ),
        # a second agent activation
        (
            (
                'agent = ctx.emit("agent:activated"',
                'ctx.emit("agent:activated", {}); agent = ctx.emit("agent:activated"',
            ),
            {"snowy-oslo": ["metric.activations"]},
        ),
    ],
)
def test_the_starter_assertions_fail_when_the_harness_changes(
    tmp_path: Path, change: tuple[str, str], failing: dict[str, list[str]]
) -> None:
    (agent := tmp_path / "agent.py").parent.mkdir(exist_ok=True)
    init_project(tmp_path)
    old, new = change
    assert old in agent.read_text()
    agent.write_text(agent.read_text().replace(old, new))
    result = run_starter(tmp_path)
    found = {
        c.case_id: [a.assertion["type"] for a in c.assertions if not a.passed]
        for c in result.cases
        if not c.passed
    }
    assert found == failing


def test_force_is_a_plain_flag_as_every_boolean_option(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["init", str(tmp_path), "--force", "true"])
    assert done.exit_code == 2
    assert "--force is a flag and takes no value" in " ".join(done.output.split())
    assert list(tmp_path.iterdir()) == []


def test_with_a_provider_the_harness_asks_the_model_records_and_replays_offline(
    tmp_path: Path,
) -> None:
    """What the dataset's comments say: ``--provider openai:<model> --record`` calls the
    model through the run's proxy, a later run replays the cassette with no server."""
    init_project(tmp_path)

    def model(call: Call) -> Reply:
        assert call.body["model"] == "gpt-4o-mini"
        return Reply(f"Model says: {call.last_user_text}")

    with MockLLMServer(model) as mock:
        upstream = Upstream(f"{mock.url}/v1", mock.url, "sk-test-openai", "sk-test-anthropic")
        recorded = run_starter(tmp_path, "openai:gpt-4o-mini", mode="record", upstream=upstream)
        assert len(mock.calls) == 2  # Atlantis has no forecast to word: no call
    dead = Upstream("http://127.0.0.1:9/v1", "http://127.0.0.1:9", "", "")
    replayed = run_starter(tmp_path, "openai:gpt-4o-mini", mode="replay", upstream=dead)
    for result in (recorded, replayed):
        assert [(c.case_id, c.passed, c.error) for c in result.cases] == [
            ("sunny-paris", True, None),
            ("snowy-oslo", True, None),
            ("unknown-city", True, None),
        ]
        (answer,) = [
            s.payload["content"] for s in result.cases[0].signals if s.name == "text:complete"
        ]
        assert (
            answer
            == "Model says: In one sentence, tell the user the weather in Paris: 18°C and sunny."
        )
    assert (tmp_path / "evals" / "cassettes" / "example.proxy.yaml").is_file()


def test_force_replaces_a_symlink_not_the_file_it_points_to(tmp_path: Path) -> None:
    """``--force`` overwrites the starter's files: a link in their place is replaced by
    the starter's file, and what it points to (the user's own agent) is left as it was."""
    project, mine = tmp_path / "proj", tmp_path / "my_agent.py"
    project.mkdir()
    mine.write_text("# my real agent\n")
    (project / "agent.py").symlink_to(mine)
    with pytest.raises(InputError, match="already exists"):
        init_project(project)
    init_project(project, force=True)
    assert mine.read_text() == "# my real agent\n"
    assert not (project / "agent.py").is_symlink()
    assert (project / "agent.py").read_text() == STARTER[Path("agent.py")]


def test_a_named_pipe_in_a_starter_file_s_place_already_exists(tmp_path: Path) -> None:
    """Anything in the place of a starter file (a named pipe, which writing would block
    on for ever) is refused without --force and replaced with it; the starter's files
    are written whole (a temp file renamed), never half."""
    os.mkfifo(tmp_path / "agent.py")
    with pytest.raises(InputError, match=r"agent\.py: already exists"):
        init_project(tmp_path)
    init_project(tmp_path, force=True)
    assert (tmp_path / "agent.py").read_text() == STARTER[Path("agent.py")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.py", "evals"]  # no temp left


def test_dash_is_no_directory_to_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-`` means stdout to every command: ``init -`` is refused, not a folder named ``-``."""
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["init", "-"])
    assert done.exit_code == 2, done.output
    assert "- (stdout) holds no folder or dataset: give a path" in done.output
    assert list(tmp_path.iterdir()) == []


def test_the_next_commands_run_as_printed_for_a_folder_named_like_an_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``init -- -evals`` printed ``signal-eval validate -evals/evals/example.yaml``, which
    every command reads as the option ``-e``."""
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["init", "--", "-evals"])
    assert done.exit_code == 0, done.output
    validate = next(line for line in done.output.splitlines() if "signal-eval validate" in line)
    assert validate.split() == ["signal-eval", "validate", "./-evals/evals/example.yaml"]
    checked = CliRunner().invoke(app, shlex.split(validate)[1:])
    assert checked.exit_code == 0, checked.output
    assert "put your agent in ./-evals/agent.py" in done.output
