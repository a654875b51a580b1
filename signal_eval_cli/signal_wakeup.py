"""A socket that a signal makes readable: how a wait in ``select`` (an event loop's, or a
named pipe's wait for a reader) learns that a signal came, when Python's handler runs
only between bytecodes of the main thread and may only record it."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["signal_wakeup"]


@contextmanager
def signal_wakeup() -> Iterator[socket.socket | None]:
    """A socket (non-blocking) that becomes readable when a signal arrives, its handler
    running as well; None off the main thread, where no signal is handled."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield reader
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
