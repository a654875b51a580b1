"""Which frames are the user's: errors point at their code, never at ours or the stdlib's."""

from __future__ import annotations

import os
import sysconfig
import traceback
from collections.abc import Iterable
from types import FrameType

__all__ = ["is_user_frame", "running_location", "user_location"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_PATHS = sysconfig.get_paths()
_OUR_DIRS = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in {_PACKAGE_DIR, _PATHS["stdlib"], _PATHS["platstdlib"]}
)
_INSTALLED = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep for p in {_PATHS["purelib"], _PATHS["platlib"]}
)


def _real(frame: traceback.FrameSummary) -> str:
    return os.path.normcase(os.path.realpath(frame.filename))


def is_user_frame(frame: traceback.FrameSummary) -> bool:
    """Not ours, not the stdlib's, not generated (``<string>``, ``<frozen …>``)."""
    return not frame.filename.startswith("<") and not _real(frame).startswith(_OUR_DIRS)


def user_location(frames: Iterable[traceback.FrameSummary]) -> str | None:
    """``file.py:LINE in function`` of the innermost user frame (the user's own files
    before installed libraries such as an SDK), else None."""
    mine = [f for f in frames if is_user_frame(f)]
    own = [f for f in mine if not _real(f).startswith(_INSTALLED)]
    if not (own or mine):
        return None
    frame = (own or mine)[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"


def running_location(frame: FrameType | None) -> str | None:
    """The innermost user frame of what an event loop thread is running now (the frames
    below the loop's callback dispatch, so not the script that started the loop)."""
    if frame is None:
        return None
    frames = traceback.extract_stack(frame)
    dispatch = [
        i
        for i, f in enumerate(frames)
        if f.name == "_run" and f.filename.endswith(os.path.join("asyncio", "events.py"))
    ]
    return user_location(frames[dispatch[-1] + 1 :] if dispatch else frames)
