"""Driving the real ``signal-eval`` CLI the way a user does: a subprocess, from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "signal-eval"


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``signal-eval ARGS`` in ``cwd`` with a clean environment (no key, no PYTHONPATH)."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "COLUMNS": "200", "HOME": str(cwd)}
    return subprocess.run(
        [str(CLI), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**base, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def project_copy(tmp_path: Path) -> Path:
    """A scratch copy of the repository's example project (datasets, agents, cassettes)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "datasets", project / "datasets")
    return project
