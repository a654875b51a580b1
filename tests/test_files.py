"""Atomic writes: whole files only, with the permissions a plain open() would give."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from signal_eval_cli.files import atomic_write_text


def test_new_file_gets_umask_permissions_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "sub" / "results.json"
        atomic_write_text(target, "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_overwrite_keeps_the_existing_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "cassette.yaml"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.yaml"]
