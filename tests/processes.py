"""Reading /proc in tests that check no process outlives a kill (Linux only)."""

from __future__ import annotations

from pathlib import Path

_DEAD = ("Z", "X")  # a zombie is dead, just not yet reaped


def _stat_fields(path: Path) -> list[str] | None:
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return fields is not None and fields[0] not in _DEAD


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry / "stat")
            if fields is not None and int(fields[2]) == pgid and fields[0] not in _DEAD:
                members.append(int(entry.name))
    return members
