"""Case recordings a run has kept but not yet written into its cassette.

A cassette is YAML rewritten whole, so a run writes it at its end (a 10,000-case run
must not rewrite it after every case). So that a killed run (``kill -9``) loses no
finished case's recording, each case run's recording is also appended, as one JSON line,
to ``<cassette>.unsaved`` beside it when the case ends: one small write per case. Saving
the cassette removes the file; a run that finds one (its predecessor was killed) writes
it into the cassette before it reads it. A line the kill cut short is ignored, so what
is lost is only the cases in flight.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from signal_eval_cli.files import utf8
from signal_eval_cli.proxy.cassette import Interaction, SessionKey
from signal_eval_cli.redaction import byte_redactions, redact_bytes

__all__ = ["Backlog"]

_encode_line = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


class Backlog:
    """The ``.unsaved`` file of the cassette at ``cassette``: whole case-run recordings,
    each replacing that case run's recording in the cassette, a later line an earlier one."""

    def __init__(self, cassette: Path) -> None:
        self.path = cassette.with_name(cassette.name + ".unsaved")
        self._lock = threading.Lock()
        self._redactions: list[tuple[bytes, bytes]] | None = None
        """The secrets to redact, found once (scanning the environment per case costs
        more than the write)."""
        self._fd: int | None = None
        """The file, open for appending from the first add to :meth:`clear`: one system
        call per case, not three (this runs as each case ends, on the runner's thread,
        and each call there lets the proxy's thread take the interpreter)."""

    def add(self, key: SessionKey, calls: Sequence[Interaction]) -> None:
        """Append one case run's recording (flushed: a kill after this keeps it)."""
        line = {"case": key[0], "run": key[1], "calls": [i.to_dict() for i in calls]}
        text = _encode_line(line)
        with self._lock:
            if self._redactions is None:
                self._redactions = byte_redactions()
            data = redact_bytes(utf8(text + "\n"), redactions=self._redactions)
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)  # a per-case one: not yet
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            os.write(self._fd, data)

    def read(self) -> dict[SessionKey, list[Interaction]]:
        """The recordings in the file (none when there is none); a line that is not a
        whole one (the last, cut short by a kill) is skipped."""
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return {}
        found: dict[SessionKey, list[Interaction]] = {}
        for raw in lines:
            try:
                line = json.loads(raw)
                key = (str(line["case"]), int(line["run"]))
                found[key] = [Interaction.from_dict(item) for item in line["calls"]]
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        return found

    def clear(self) -> None:
        with self._lock:
            self._close()
            self.path.unlink(missing_ok=True)

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit, os may be gone first
            self._close()
