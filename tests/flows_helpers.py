"""Driving the real ``signal-eval`` CLI the way a user does: a subprocess, from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "signal-eval"


def user_env(**env: str) -> dict[str, str]:
    """A clean environment (no key, no PYTHONPATH) plus ``env``: what a new user's shell has.
    Keeps conftest's PYTEST_DISABLE_PLUGIN_AUTOLOAD, so the pytest goals of scenarios skip
    this venv's test plugins (seconds of CPU each), as a project's own venv would."""
    keep = {k: os.environ[k] for k in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD",) if k in os.environ}
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "COLUMNS": "200", **keep, **env}


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``signal-eval ARGS`` in ``cwd`` with a clean environment (no key, no PYTHONPATH)."""
    return subprocess.run(
        [str(CLI), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=user_env(HOME=str(cwd), **(env or {})),
        stdin=subprocess.DEVNULL,
    )


def project_copy(tmp_path: Path) -> Path:
    """A scratch copy of the repository's example project (datasets, agents, cassettes)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "datasets", project / "datasets")
    return project
