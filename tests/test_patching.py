"""PATCH, DELETE and RENAME agentTask verbs: exact application, all-or-nothing writes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.scenarios.patching import PatchError, apply_file_patch, parse_patch
from signal_eval_cli.scenarios.workspace import (
    AgentTaskError,
    DeleteOp,
    PathEscapeError,
    RenameOp,
    apply_agent_task,
    parse_agent_task,
)
from tests.test_workspace import tree

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "core.autocrlf=false", *args],
        cwd=repo,
        env=GIT_ENV,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8")


def init_repo(repo: Path, files: dict[str, bytes]) -> None:
    git(repo, "init", "-q")
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base", "--allow-empty")


def apply(instruction: str | list[str], workspace: Path) -> list[str]:
    return apply_agent_task(parse_agent_task(instruction), workspace)


# -- the property: PATCH(git diff old new)(old) == new, byte for byte ---------------------

line = st.text(alphabet="ab \t\r{}é", max_size=6)
content = st.builds(
    lambda lines, final: "\n".join(lines) + ("\n" if final and lines else ""),
    st.lists(line, max_size=12),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=content, new=content)
def test_patch_of_git_diff_turns_old_into_new_exactly(old: str, new: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        init_repo(repo, {"f.txt": old.encode()})
        (repo / "f.txt").write_bytes(new.encode())
        diff = git(repo, "diff")
        git(repo, "checkout", "-q", "--", "f.txt")
        assert (repo / "f.txt").read_bytes() == old.encode()
        if diff:
            apply(f"PATCH|{diff}", repo)
        assert (repo / "f.txt").read_bytes() == new.encode()


# -- git's forms: several files, new, deleted, renamed, modes, format-patch ---------------


def test_format_patch_with_new_deleted_renamed_and_modified_files(tmp_path: Path) -> None:
    base = {
        "keep.py": b"one\ntwo\nthree\n",
        "gone.txt": b"bye\n",
        "old/name.txt": b"same\ncontent\nhere\nfor\nrename\n",
        "empty-gone": b"",
        "tail.txt": b"no newline",
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    init_repo(repo, base)
    (repo / "keep.py").write_bytes(b"one\n2\nthree\nfour\n")
    (repo / "gone.txt").unlink()
    (repo / "empty-gone").unlink()
    (repo / "old/name.txt").rename(repo / "new-name.txt")
    (repo / "old").rmdir()
    (repo / "fresh").mkdir()
    (repo / "fresh/a.txt").write_bytes(b"new file\n")
    (repo / "fresh/empty").write_bytes(b"")
    (repo / "tail.txt").write_bytes(b"no newline\nnow has one\n")
    (repo / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change everything")
    expected = {**tree(repo)}
    expected.pop(".git")
    patch = git(repo, "format-patch", "-1", "-M", "--stdout")
    assert "rename from old/name.txt" in patch and patch.startswith("From ")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, data in base.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_bytes(data)
    changed = apply(f"PATCH|{patch}", workspace)
    assert tree(workspace) == {k: v for k, v in expected.items() if not k.startswith(".git")}
    assert stat.S_IMODE((workspace / "run.sh").stat().st_mode) == 0o755
    assert set(changed) >= {"keep.py", "gone.txt", "old/name.txt", "new-name.txt", "run.sh"}


def test_plain_diff_u_and_a_trimmed_patch_apply(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_bytes(b"a\nb\nc\n")
    patch = "--- x.txt\n+++ x.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"  # no final newline
    apply(f"PATCH|{patch}", tmp_path)
    assert (tmp_path / "x.txt").read_bytes() == b"a\nB\nc\n"


# -- failures: located messages, nothing written ------------------------------------------


def test_non_applying_hunk_shows_the_hunk_and_the_file_lines_and_writes_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\n")
    (tmp_path / "b.txt").write_bytes(b"alpha\nbeta\ngamma\n")
    before = tree(tmp_path)
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -2,2 +2,2 @@\n-BETA\n+b\n gamma\n"
    )
    with pytest.raises(AgentTaskError) as info:
        apply(f"PATCH|{patch}", tmp_path)
    message = str(info.value)
    assert "hunk 1 of b.txt does not apply at line 2" in message
    assert "@@ -2,2 +2,2 @@\n  BETA\n  gamma" in message
    assert "      2 | beta" in message and "      3 | gamma" in message
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n", "patch line 5: Hunk is shorter"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n+b\n+c\n", "patch line 5: '+b' is outside every hunk"),
        ("just prose, no diff\n", "no file changes found"),
        ("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "contains '..'"),
        (
            "diff --git a/p.bin b/p.bin\nindex 1..2 100644\nBinary files a/p.bin and b/p.bin differ\n",
            "binary patches are not supported",
        ),
    ],
)
def test_corrupt_patches_are_rejected_when_parsed(patch: str, message: str) -> None:
    with pytest.raises(AgentTaskError) as info:
        parse_agent_task(f"PATCH|{patch}")
    assert message in str(info.value)


def test_patch_of_a_missing_file_or_onto_an_existing_one_fails(tmp_path: Path) -> None:
    (tmp_path / "there.txt").write_bytes(b"x\n")
    with pytest.raises(AgentTaskError, match=r"cannot PATCH 'missing\.txt': no such file"):
        apply("PATCH|--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n", tmp_path)
    with pytest.raises(AgentTaskError, match=r"'there\.txt': the file already exists"):
        apply("PATCH|--- /dev/null\n+++ b/there.txt\n@@ -0,0 +1 @@\n+b\n", tmp_path)


def test_a_deletion_patch_must_remove_every_line(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_bytes(b"a\nb\n")
    with pytest.raises(PatchError, match="deletes the file but the file has other lines"):
        [patch] = parse_patch("--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n")
        apply_file_patch(patch, (tmp_path / "d.txt").read_bytes())


# -- DELETE and RENAME -------------------------------------------------------------------


def test_delete_and_rename_parse_and_apply(tmp_path: Path) -> None:
    assert parse_agent_task(["DELETE|a.txt", "RENAME|b.txt|dir/c.txt\n"]) == [
        DeleteOp("a.txt"),
        RenameOp("b.txt", "dir/c.txt"),
    ]
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "b.txt").write_bytes(b"b")
    (tmp_path / "b.txt").chmod(0o700)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/only.txt").write_bytes(b"o")
    apply(["DELETE|a.txt", "RENAME|b.txt|dir/c.txt", "DELETE|sub/only.txt"], tmp_path)
    assert tree(tmp_path) == {"dir": "dir", "dir/c.txt": b"b"}
    assert stat.S_IMODE((tmp_path / "dir/c.txt").stat().st_mode) == 0o700


def test_later_commands_see_earlier_ones(tmp_path: Path) -> None:
    apply(["WRITE|n.txt|a\n", "PATCH|--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-a\n+b\n"], tmp_path)
    assert (tmp_path / "n.txt").read_bytes() == b"b\n"


@pytest.mark.parametrize(
    ("instruction", "message"),
    [
        (["DELETE|missing.txt"], "cannot DELETE 'missing.txt': no such file"),
        (["RENAME|keep.txt|other.txt"], "cannot RENAME 'other.txt': the file already exists"),
        (["RENAME|missing|x"], "cannot RENAME 'missing': no such file"),
        (["DELETE|sub"], "'sub' is a directory"),
        (["WRITE|new.txt|x", "DELETE|keep.txt", "DELETE|keep.txt"], "no such file"),
        (["RENAME|keep.txt|out/x"], "through the symlink 'out'"),
        (["WRITE|keep.txt/x|y"], "'keep.txt' is a file, not a directory"),
    ],
)
def test_delete_and_rename_are_refused_before_anything_is_written(
    tmp_path: Path, instruction: list[str], message: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_bytes(b"k")
    (ws / "other.txt").write_bytes(b"o")
    (ws / "sub").mkdir()
    (ws / "out").symlink_to(outside)
    before = tree(tmp_path)
    with pytest.raises(AgentTaskError) as info:
        apply(instruction, ws)
    assert message in str(info.value)
    assert tree(tmp_path) == before


def test_a_path_escape_in_a_rename_is_a_path_escape_error() -> None:
    with pytest.raises(PathEscapeError):
        parse_agent_task("RENAME|a.txt|../b.txt")
    with pytest.raises(PathEscapeError):
        parse_agent_task("DELETE|/etc/passwd")


# -- in a scenario: bad patches exit 2 at load; a hunk that misses fails the scenario --------


def _scenario(tmp_path: Path, instruction: str) -> Path:
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx/greet.py").write_text('def greet():\n    return "hi"\n')
    path = tmp_path / "s.yaml"
    body = "\n".join("    " + line for line in instruction.split("\n"))
    path.write_text(
        "id: p\nadapterId: python-pytest\n"
        f"goals: [{{goal: check, command: {sys.executable}, args: ['-c', 'import greet']}}]\n"
        "fixture: {path: fx}\n"
        "agentTask:\n  instruction: |\n" + body + "\n"
    )
    return path


def test_a_corrupt_patch_in_a_scenario_is_exit_2_at_its_line(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "PATCH|--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n-x")
    result = CliRunner().invoke(app, ["scenario", str(path), "--root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:6:" in result.output and "PATCH: patch line 4: Hunk is shorter" in result.output
    assert "Traceback" not in result.output


def test_a_patch_that_does_not_apply_fails_the_scenario_and_changes_nothing(
    tmp_path: Path,
) -> None:
    patch = '--- a/greet.py\n+++ b/greet.py\n@@ -2 +2 @@\n-    return "hello"\n+    return 1'
    path = _scenario(tmp_path, "PATCH|" + patch)
    before = tree(tmp_path / "fx")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app, ["scenario", str(path), "--root", str(tmp_path), "--keep-workdir", "-o", str(out)]
    )
    assert result.exit_code == 1, result.output
    [scenario] = json.loads(out.read_text())["scenarios"]
    assert "hunk 1 of greet.py does not apply at line 2" in scenario["error"]
    assert '      2 |     return "hi"' in scenario["error"]
    assert tree(Path(scenario["workdir"])) == before == tree(tmp_path / "fx")
    shutil.rmtree(Path(scenario["workdir"]).parent)


def test_a_patch_scenario_passes(tmp_path: Path) -> None:
    patch = '--- a/greet.py\n+++ b/greet.py\n@@ -2 +2 @@\n-    return "hi"\n+    return "hello"'
    path = _scenario(tmp_path, "PATCH|" + patch)
    result = CliRunner().invoke(app, ["scenario", str(path), "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
