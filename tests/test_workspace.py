"""The workspace: temp copies, the agentTask interpreter and its path-escape checks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from signal_eval_cli.scenarios.overlay import can_overlay
from signal_eval_cli.scenarios.workspace import (
    AgentTaskError,
    PathEscapeError,
    WriteOp,
    apply_agent_task,
    parse_agent_task,
    prepare_workspace,
    resolve_inside,
)


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, or ``link -> target`` for symlinks."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[key] = f"link -> {os.readlink(path)}"
        elif path.is_file():
            out[key] = path.read_bytes()
        else:
            out[key] = "dir"
    return out


# -- parsing -----------------------------------------------------------------------------


def test_write_contents_keep_pipes_newlines_and_write_lines() -> None:
    contents = "a | b\n\nWRITE|other.txt|not a second command\n|trailing pipe|\n"
    [op] = parse_agent_task(f"WRITE|src/x.txt|{contents}")
    assert op == WriteOp("src/x.txt", contents)


def test_a_list_holds_one_command_per_item() -> None:
    ops = parse_agent_task(["WRITE|a.txt|one", "WRITE|b/c.txt|two\n"])
    assert ops == [WriteOp("a.txt", "one"), WriteOp("b/c.txt", "two\n")]


def test_empty_contents_are_allowed() -> None:
    assert parse_agent_task("WRITE|empty.txt|") == [WriteOp("empty.txt", "")]


@pytest.mark.parametrize(
    ("instruction", "message"),
    [
        ("write|a.txt|x", "unknown agentTask verb 'write' — did you mean 'WRITE'?"),
        ("DELETE|a.txt|b", "DELETE needs 'DELETE|<relativePath>': too many fields"),
        ("RENAME|a.txt", "RENAME needs 'RENAME|<fromPath>|<toPath>'"),
        ("RENAME|a|b|c", "RENAME needs 'RENAME|<fromPath>|<toPath>': too many fields"),
        ("PATCH|hello", "PATCH: no file changes found"),
        ("MOVE|a|b", "unknown agentTask verb 'MOVE'"),
        ("Please optimise the query", "not an agentTask command"),
        ("WRITE|a.txt", "no '|' after the path"),
    ],
)
def test_malformed_commands_are_errors(instruction: str, message: str) -> None:
    with pytest.raises(AgentTaskError) as info:
        parse_agent_task(instruction)
    assert message in str(info.value)


def test_a_bad_command_in_a_list_is_named_by_number() -> None:
    with pytest.raises(AgentTaskError, match="command 2: unknown agentTask verb"):
        parse_agent_task(["WRITE|a.txt|x", "MOVE|a.txt|b.txt"])


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.txt", "contains '..'"),
        ("src/../../outside.txt", "contains '..'"),
        ("src\\..\\..\\outside.txt", "contains '..'"),
        ("/etc/passwd", "is absolute"),
        ("C:/Windows/x", "is absolute"),
        (".", "names the workspace itself"),
        ("", "empty path"),
    ],
)
def test_paths_escaping_by_their_text_are_rejected_at_parse_time(path: str, message: str) -> None:
    with pytest.raises(PathEscapeError) as info:
        parse_agent_task(f"WRITE|{path}|x")
    assert message in str(info.value)


# -- applying --------------------------------------------------------------------------------


def test_write_creates_parent_directories_and_writes_bytes_exactly(tmp_path: Path) -> None:
    contents = "line 1\r\nünïcode | pipe\nno newline at end"
    written = apply_agent_task([WriteOp("deep/er/file.txt", contents)], tmp_path)
    assert written == ["deep/er/file.txt"]
    assert (tmp_path / "deep/er/file.txt").read_bytes() == contents.encode("utf-8")


def test_write_replaces_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    apply_agent_task(parse_agent_task("WRITE|a.txt|new"), tmp_path)
    assert (tmp_path / "a.txt").read_text() == "new"


@pytest.fixture
def escape_setup(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace holding a symlink to a directory outside it."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "src").mkdir(parents=True)
    outside.mkdir()
    (workspace / "src" / "keep.txt").write_text("keep")
    (workspace / "link").symlink_to(outside)
    (workspace / "src" / "file-link").symlink_to(outside / "target.txt")
    return workspace, outside


@pytest.mark.parametrize(
    "bad",
    [
        WriteOp("../escaped.txt", "x"),  # built directly: parse would refuse it
        WriteOp("/tmp/escaped-absolute.txt", "x"),
        WriteOp("link/escaped.txt", "x"),  # through a directory symlink
        WriteOp("link/new/dir/escaped.txt", "x"),
        WriteOp("src/file-link", "x"),  # a dangling file symlink pointing outside
    ],
)
def test_escapes_write_nothing_anywhere(escape_setup: tuple[Path, Path], bad: WriteOp) -> None:
    workspace, outside = escape_setup
    before_ws, before_out = tree(workspace), tree(outside)
    ops = [WriteOp("src/first.txt", "would be written first"), bad]
    with pytest.raises(PathEscapeError) as info:
        apply_agent_task(ops, workspace)
    assert tree(workspace) == before_ws
    assert tree(outside) == before_out
    assert not (workspace.parent / "escaped.txt").exists()
    assert not Path("/tmp/escaped-absolute.txt").exists()
    assert repr(bad.path) in str(info.value)


def test_symlink_escape_message_names_the_symlink(escape_setup: tuple[Path, Path]) -> None:
    workspace, _ = escape_setup
    with pytest.raises(PathEscapeError, match="through the symlink 'link'"):
        resolve_inside(workspace, "link/x.txt")


def test_symlinks_staying_inside_are_fine(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to("real")
    apply_agent_task([WriteOp("alias/x.txt", "ok")], tmp_path)
    assert (tmp_path / "real" / "x.txt").read_text() == "ok"


def test_writing_over_a_directory_or_under_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("f")
    with pytest.raises(AgentTaskError, match="is a directory"):
        apply_agent_task([WriteOp("dir", "x")], tmp_path)
    with pytest.raises(AgentTaskError, match="'file' is a file"):
        apply_agent_task([WriteOp("ok.txt", "x"), WriteOp("file/x.txt", "x")], tmp_path)
    assert not (tmp_path / "ok.txt").exists()
    with pytest.raises(AgentTaskError, match="both a file and a directory"):
        apply_agent_task([WriteOp("a", "x"), WriteOp("a/b", "y")], tmp_path)
    assert not (tmp_path / "a").exists()


# -- preparing -------------------------------------------------------------------------------


def test_prepare_copies_into_a_temp_dir_and_cleanup_removes_it(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "a.txt").write_text("a")
    (fixture / "rel-link").symlink_to("src/a.txt")
    workspace = prepare_workspace(fixture, label="my scenario/1")
    try:
        assert workspace.copied and workspace.path != fixture
        assert workspace.path.name == "fx"
        assert tree(workspace.path) == tree(fixture)
        assert (workspace.path / "rel-link").is_symlink()  # kept as a link, not followed
        (workspace.path / "src" / "a.txt").write_text("changed")
        assert (fixture / "src" / "a.txt").read_text() == "a"
    finally:
        workspace.cleanup()
    assert workspace.temp_dir is None and not workspace.path.exists()


def test_prepare_in_place_uses_the_fixture(tmp_path: Path) -> None:
    workspace = prepare_workspace(tmp_path, copy=False)
    assert workspace.path == tmp_path.resolve() and not workspace.copied
    workspace.cleanup()
    assert tmp_path.exists()


def test_prepare_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="fixture directory not found"):
        prepare_workspace(tmp_path / "missing")


# -- overlay workspaces ------------------------------------------------------------------


needs_overlay = pytest.mark.skipif(
    not can_overlay(Path(__file__).parent), reason="this process may not mount overlayfs"
)


@needs_overlay
def test_an_overlay_workspace_never_writes_to_the_fixture(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    (fixture / "sub").mkdir(parents=True)
    (fixture / "a.txt").write_bytes(b"alpha\n")
    (fixture / "sub" / "b.txt").write_bytes(b"beta\n")
    (fixture / "run.sh").write_bytes(b"#!/bin/sh\n")
    before = tree(fixture)
    stats = {p: os.lstat(p) for p in fixture.rglob("*")}
    one = prepare_workspace(fixture, label="one")
    two = prepare_workspace(fixture, label="two")
    try:
        assert one.strategy == two.strategy == "overlay"
        with open(one.path / "a.txt", "r+b") as handle:  # in place, as an editor may
            handle.write(b"ALPHA")
        (one.path / "sub" / "b.txt").write_bytes(b"")  # truncate
        (one.path / "run.sh").chmod(0o755)
        (one.path / "sub" / "b.txt").rename(one.path / "c.txt")
        shutil.rmtree(one.path / "sub")
        (one.path / "new.txt").write_text("new")
        assert tree(one.path) == {
            "a.txt": b"ALPHA\n",
            "c.txt": b"",
            "new.txt": b"new",
            "run.sh": b"#!/bin/sh\n",
        }
        assert tree(two.path) == before  # another workspace sees only the fixture
        assert tree(fixture) == before
        assert {p: os.lstat(p) for p in fixture.rglob("*")} == stats
    finally:
        one.cleanup()
        two.cleanup()
    assert not one.path.exists() and not two.path.exists()
    assert str(one.path) not in Path("/proc/self/mounts").read_text()


@needs_overlay
def test_a_kept_workdir_and_signal_eval_workspace_copy_are_plain_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x.txt").write_text("x")
    kept = prepare_workspace(tmp_path, overlay=False)
    assert kept.strategy == "copy" and (kept.path / "x.txt").read_text() == "x"
    kept.cleanup()
    monkeypatch.setenv("SIGNAL_EVAL_WORKSPACE", "copy")
    copied = prepare_workspace(tmp_path)
    assert copied.strategy == "copy"
    copied.cleanup()
