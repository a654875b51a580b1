"""Overlay workspaces: the fixture as a read-only lower layer, the workspace's writes apart.

Preparing a workspace for a 10,000-file fixture by copying it writes the whole tree
again for every scenario. An overlay mount (Linux ``overlayfs``) costs one mount
instead: reads come from the fixture, every write — in place, truncating, renaming,
deleting — lands in the workspace's own upper directory (copy-up), and overlayfs never
writes to its lower directory, so the fixture cannot be modified through it.

It needs the right to mount (root, or CAP_SYS_ADMIN): whether this process has it is
probed once, by mounting an empty overlay in a temp directory. Without it, or for a
fixture path overlayfs options cannot express (``,`` ``:`` ``\\``), or when
``SIGNAL_EVAL_WORKSPACE=copy``, workspaces are copies.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["can_overlay", "mount_overlay", "unmount"]

_MOUNT = shutil.which("mount")
_UMOUNT = shutil.which("umount")
_UNSAFE = (",", ":", "\\", "\n")


def _run(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _options(lower: Path, upper: Path, work: Path) -> str:
    return f"lowerdir={lower},upperdir={upper},workdir={work}"


@functools.cache
def _mountable() -> bool:
    if not sys.platform.startswith("linux") or _MOUNT is None or _UMOUNT is None:
        return False
    if os.environ.get("SIGNAL_EVAL_WORKSPACE", "auto") == "copy":
        return False
    with tempfile.TemporaryDirectory(prefix="signal-eval-overlay-probe-") as tmp:
        parts = [Path(tmp, name) for name in ("lower", "upper", "work", "merged")]
        for part in parts:
            part.mkdir()
        if not mount_overlay(*parts):
            return False
        return unmount(parts[3])


def can_overlay(fixture: Path) -> bool:
    """Whether a workspace of ``fixture`` can be an overlay (see the module docstring)."""
    if os.environ.get("SIGNAL_EVAL_WORKSPACE", "auto") == "copy":
        return False
    return not any(c in str(fixture) for c in _UNSAFE) and _mountable()


def mount_overlay(lower: Path, upper: Path, work: Path, merged: Path) -> bool:
    assert _MOUNT is not None
    options = _options(lower, upper, work)
    return _run([_MOUNT, "-t", "overlay", "overlay", "-o", options, str(merged)])


def unmount(merged: Path) -> bool:
    """Unmount (lazily if something still has it open: it goes when they do)."""
    assert _UMOUNT is not None
    return _run([_UMOUNT, str(merged)]) or _run([_UMOUNT, "-l", str(merged)])
