"""Writing files so that a crash or Ctrl-C never leaves half a file behind."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8, as it is (no newline translation); see :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temp file beside ``path``, fsync, then rename over it.

    A symlink is followed (the file it points to is replaced, the link stays), and
    anything that is not a regular file — ``/dev/null``, a named pipe — or that is a
    process's stream (``/dev/stdout``, ``/proc/self/fd/1``: maybe redirected to a file) is
    appended to as it is: renaming over it would replace the device or the user's file.
    """
    if _is_stream(path):
        with open(path, "ab") as handle:
            handle.write(data)
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; give what open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_stream(path: str | Path) -> bool:
    try:
        mode = os.stat(path).st_mode  # follows symlinks: /dev/stdout -> the fd's file
    except OSError:
        return False
    return not stat.S_ISREG(mode) or os.path.abspath(path).startswith(("/dev/", "/proc/"))


def _mode_for(target: Path) -> int:
    """The existing file's mode, else 0666 less the umask (what a plain open() creates)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
