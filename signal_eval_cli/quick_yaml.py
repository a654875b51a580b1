"""The fast path for reading YAML: plain data, no line numbers.

Building a node tree with marks for every value (what ``file:line:col`` needs) costs
far more than the data itself: a 100,000-case dataset took minutes and gigabytes.
:func:`quick_data` builds the data straight from libyaml's events instead, and
vouches only for the documents it fully understands: whenever it meets anything
unusual (an alias, a merge key, an explicit tag, a non-string key, a value past
the bounds of :mod:`signal_eval_cli.limits`, a syntax error) it raises
:class:`Unsure`, and the caller parses again with the located, bounded loader, which
reports the problem at its place. So both paths give the same data, and every message
the same location. A duplicate key is the one problem it reports itself (where its
event starts, as the located loader would): it is found only once the whole document
has parsed, and locating it by the slow way would cost a large file minutes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.limits import MAX_DEPTH, MAX_INT_DIGITS

try:
    from yaml._yaml import CParser as _Events
except ImportError:  # pragma: no cover - PyYAML wheels ship libyaml
    _Events = None  # type: ignore[misc,assignment]

__all__ = ["QuickData", "Unsure", "quick_data"]

_STR = "tag:yaml.org,2002:str"
_NO_KEY = object()  # the mapping on top of the stack waits for a key


class Unsure(Exception):
    """The fast path does not vouch for this document: parse it with the located loader."""


@dataclass(frozen=True, slots=True)
class QuickData:
    """The data, and the text each non-string plain value was written as (when one text
    gave that value: ``null`` and ``~`` both give None)."""

    data: Any
    written: dict[tuple[type, Any], str | None]
    duplicates: list[tuple[int, int, str]]
    """Each key written again in its mapping: its 1-based line and column, and the key."""
    mappings: list[dict[str, Any]]
    """Every mapping in ``data`` (see :attr:`.loading.Document.mappings`)."""

    def as_written(self, value: Any) -> str | None:
        try:
            return self.written.get((type(value), value))
        except TypeError:  # a list or mapping
            return None


class _Scalars:
    """Plain scalars resolved as the safe loader would (YAML 1.1: ``yes`` is true, ``1_0``
    is ten), each distinct text resolved once: a large dataset repeats the same field
    names and values, which then also share one string object."""

    def __init__(self) -> None:
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.seen: dict[str, Any] = {}  # plain text -> its value
        self.strings: dict[str, str] = {}  # quoted text -> one shared string
        self.written: dict[tuple[type, Any], str | None] = {}

    def plain(self, text: str) -> Any:
        try:
            return self.seen[text]
        except KeyError:
            value = self.seen[text] = self._resolve(text)
            return value

    def _resolve(self, text: str) -> Any:
        tag = self.resolver.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        if tag == _STR:
            return text
        if tag == "tag:yaml.org,2002:int" and len(text) > MAX_INT_DIGITS:
            raise Unsure(text[:20])
        construct: Callable[..., Any] | None = self.constructor.yaml_constructors.get(tag)
        if tag not in _SCALAR_TAGS or construct is None:
            raise Unsure(tag)  # a merge key `<<`, a value `=`: the located loader decides
        try:
            value = construct(self.constructor, yaml.ScalarNode(tag, text))
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            raise Unsure(text[:20]) from exc
        if isinstance(value, float) and not math.isfinite(value):
            raise Unsure(text[:20])
        typed = (type(value), value)
        self.written[typed] = text if self.written.get(typed, text) == text else None
        return value


_SCALAR_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
}


def quick_data(text: str) -> QuickData:
    """The data of a single-document YAML ``text``; :class:`Unsure` when in any doubt."""
    if _Events is None:  # pragma: no cover
        raise Unsure("no libyaml")
    scalars = _Scalars()
    try:
        with gc_paused():
            duplicates: list[tuple[int, int, str]] = []
            mappings: list[dict[str, Any]] = []
            data = _build(_Events(text), scalars, duplicates, mappings)
            return QuickData(data, scalars.written, duplicates, mappings)
    except yaml.YAMLError as exc:
        raise Unsure(str(exc)[:80]) from None
    except RecursionError:  # pragma: no cover - the builder does not recurse
        raise Unsure("recursion") from None


def _build(
    events: Any,
    scalars: _Scalars,
    duplicates: list[tuple[int, int, str]],
    mappings: list[dict[str, Any]],
) -> Any:
    """The data, from the events one by one: the open container and its pending key in
    locals (the parents' on a stack), each distinct text resolved once; each mapping
    also into ``mappings``."""
    get = events.get_event
    if type(get()) is not StreamStartEvent or type(get()) is not DocumentStartEvent:
        raise Unsure("not a single document")
    parents: list[tuple[Any, Any]] = []  # the open containers above ``top``, and their keys
    top: Any = None  # the innermost open list or dict (None: the document's root is next)
    key: Any = _NO_KEY  # top's pending key, when top is a dict
    seen, strings = scalars.seen, scalars.strings  # looked up here: most texts repeat
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            if event.tag is not None or event.anchor is not None:
                raise Unsure("tag or anchor")
            text = event.value
            if event.implicit[0]:
                value = seen[text] if text in seen else scalars.plain(text)
            else:
                value = strings.setdefault(text, text)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.tag is not None or event.anchor is not None:
                raise Unsure("tag or anchor")
            if len(parents) >= MAX_DEPTH - 1:
                raise Unsure("deep")
            parents.append((top, key))
            key = _NO_KEY
            if kind is MappingStartEvent:
                top = {}
                mappings.append(top)
            else:
                top = []
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = top
            top, key = parents.pop()
        else:  # an alias, or the end of the document too early
            raise Unsure(kind.__name__)
        if top is None:
            return _single(get, value)
        if type(top) is list:
            top.append(value)
        elif key is _NO_KEY:
            if type(value) is not str:
                raise Unsure("key")
            if value in top:
                mark = event.start_mark
                duplicates.append((mark.line + 1, mark.column + 1, value))
            key = value
        else:
            top[key] = value
            key = _NO_KEY


def _single(get: Callable[[], Any], value: Any) -> Any:
    if type(get()) is not DocumentEndEvent or type(get()) is not StreamEndEvent:
        raise Unsure("more than one document")
    if value is None:
        raise Unsure("empty")
    return value
