"""Regex searches with a time budget, enforced from outside the matching thread.

Python's ``re`` backtracks: ``(a+)+$`` against 100,000 ``a``s and a ``b`` runs for
ages, holding the GIL (so no thread can stop it and Ctrl-C is not answered). A
user's regex therefore runs in a helper process, which is killed when it passes
:data:`REGEX_BUDGET_MS`; the assertion then fails with "regex took longer than N ms"
and the run goes on. The helper speaks one JSON line per request and keeps exact
``re`` semantics (a linear-time engine such as RE2 would refuse backreferences and
lookarounds and treat ``\\d``, ``\\w`` and ``$`` differently).

The helper starts on the first search (a bare ``python -c``, ~20 ms), serves every
later one (~0.1 ms each) and exits when its stdin closes, so it never outlives us.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import selectors
import subprocess
import sys
import threading
import time

from signal_eval_cli.errors import EvalError

__all__ = ["REGEX_BUDGET_MS", "RegexTimeout", "search"]

REGEX_BUDGET_MS = 1000  # per search; see README "Limits"

_WORKER = r"""
import json, re, sys
for line in sys.stdin:
    request = json.loads(line)
    try:
        found = re.compile(request["p"], request["f"]).search(request["t"])
        answer = {"g": None if found is None else found.group(0)}
    except Exception as exc:
        answer = {"e": str(exc)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


class RegexTimeout(EvalError, ValueError):
    """A regex search passed its budget (a malformed assertion, as far as callers care)."""

    def __init__(self, pattern: str, budget_ms: int) -> None:
        super().__init__(
            f"regex took longer than {budget_ms} ms (/{pattern[:80]}/): "
            "rewrite it without nested quantifiers such as (a+)+"
        )


class _Helper:
    """One helper process, used by one search at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None

    def search(self, pattern: re.Pattern[str], text: str, budget_ms: int) -> str | None:
        request = json.dumps({"p": pattern.pattern, "f": int(pattern.flags), "t": text}) + "\n"
        with self.lock:
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(request.encode("utf-8"))
                process.stdin.flush()
                line = _read_line(process.stdout.fileno(), budget_ms / 1000)
            except (OSError, TimeoutError):
                self.stop()
                raise RegexTimeout(pattern.pattern, budget_ms) from None
        answer = json.loads(line)
        if "e" in answer:
            raise ValueError(f"regex failed: {answer['e']}")
        group: str | None = answer["g"]
        return group

    def _started(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C is ours to answer, not its
            )
        return self.process

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
        if process is not None:
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()


def _read_line(fd: int, timeout: float) -> bytes:
    """One line from ``fd`` within ``timeout`` seconds, else :class:`TimeoutError`."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise OSError("the regex helper exited")
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                return b"".join(chunks)


_HELPER = _Helper()
atexit.register(_HELPER.stop)


def search(pattern: re.Pattern[str], text: str, budget_ms: int = REGEX_BUDGET_MS) -> str | None:
    """The first match of ``pattern`` in ``text`` (``group(0)``), or None; raises
    :class:`RegexTimeout` when the search takes longer than ``budget_ms``."""
    return _HELPER.search(pattern, text, budget_ms)
