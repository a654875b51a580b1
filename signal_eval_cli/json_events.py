"""A JSON text as the events libyaml would give for it, each with its place in the text.

A ``.json`` input is read by :mod:`json`, with JSON's own meaning: ``1e-05`` is a
number and ``"\\ud83d\\ude00"`` one emoji, where YAML 1.1 reads the first as text and
refuses the second's escapes (and ``json.dumps`` writes both). Its problems are then
located by the same walk over events as a YAML document's: these events stand in for
libyaml's, with the types, values, styles and start marks that walk reads. Only a
problem to report asks for them, so a large file pays nothing when it is valid.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Iterator

import yaml
from yaml.error import Mark
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

__all__ = ["json_events", "json_node"]

_TOKEN = re.compile(
    r"""[ \t\r\n]*(?:
        ("[^"\\]*(?:\\.[^"\\]*)*")  # 1: a string
      | ([\[{])                     # 2: a container opens
      | ([\]}])                     # 3: a container closes
      | [,:]                        # between tokens: no event
      | ([^ \t\r\n,:\[\]{}"]+)      # 4: a number, true, false, null
    )""",
    re.VERBOSE,
)
_OPENS = {"{": MappingStartEvent, "[": SequenceStartEvent}
_CLOSES = {"}": MappingEndEvent, "]": SequenceEndEvent}


def json_events(text: str, name: str = "<json>") -> Iterator[Event]:
    """The events of ``text``, which must be valid JSON (the caller has parsed it):
    strings as double-quoted scalars (decoded), numbers and literals as plain ones (as
    written), 0-based lines and columns as libyaml counts them."""
    yield StreamStartEvent()
    yield DocumentStartEvent()
    line = line_start = scanned = 0
    for match in _TOKEN.finditer(text):
        group = match.lastindex
        if group is None:
            continue
        start = match.start(group)
        newlines = text.count("\n", scanned, start)
        if newlines:
            line += newlines
            line_start = text.rindex("\n", scanned, start) + 1
        scanned = start
        end = match.end(group)  # a token holds no line break
        mark = Mark(name, start, line, start - line_start, None, 0)
        end_mark = Mark(name, end, line, end - line_start, None, 0)
        token = match.group(group)
        if group == 1:
            value = json.loads(token)
            yield ScalarEvent(None, None, (False, True), value, mark, end_mark, style='"')
        elif group == 2:
            yield _OPENS[token](None, None, True, mark, end_mark, flow_style=True)
        elif group == 3:
            yield _CLOSES[token](mark, end_mark)
        else:
            yield ScalarEvent(None, None, (True, False), token, mark, end_mark, style="")
    yield DocumentEndEvent()
    yield StreamEndEvent()


def json_node(text: str, name: str = "<json>") -> yaml.Node:
    """The node tree of ``text`` (valid JSON), as ``yaml.compose`` makes one of YAML: for
    the tools that edit a file in place at its nodes' marks."""
    node = _Composer(json_events(text, name)).get_single_node()
    assert node is not None  # valid JSON holds a value
    return node


class _Composer(yaml.composer.Composer, yaml.resolver.Resolver):
    """PyYAML's composer, fed the events of :func:`json_events`."""

    def __init__(self, events: Iterable[Event]) -> None:
        self.events = deque(events)
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    def check_event(self, *choices: type[Event]) -> bool:
        return bool(self.events) and (not choices or isinstance(self.events[0], choices))

    def peek_event(self) -> Event:
        return self.events[0]

    def get_event(self) -> Event:
        return self.events.popleft()
