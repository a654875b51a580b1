"""A large dataset's cases read by a native parser, where it reads them as PyYAML would.

Even bare libyaml events through PyYAML cost seconds for a 100,000-case dataset;
``yaml_rs`` builds the data natively in a fraction of that. But it reads YAML 1.2, and
we promise PyYAML's safe loader (YAML 1.1: ``yes`` is true, ``010`` is eight, ``1e3``
a string, ``1:20`` eighty). So :func:`native_cases` reads the ``cases:`` list one case
at a time (little memory held by the parser at once) and vouches for the result only
when nothing in it could read otherwise:

* a string in the data could have been a plain scalar that PyYAML resolves to
  something else only if YAML 1.2 resolves that text to a string too: such strings
  (``yes``, ``1:20``) are looked for in the text, unquoted;
* a number could have been written the 1.1 way only with a leading ``0``, an exponent,
  or ``+.``/``-.``: each such token in the text must resolve the same in both;
* no date, time, non-finite number, huge int, non-string or very long key, nesting
  past :data:`~.limits.MAX_DEPTH`;
* no alias (the parser refuses them), anchor, tag, directive, extra document, tab,
  carriage return, YAML 1.1's extra line breaks, or control character; no string of
  line breaks only (an empty block scalar at the end of an item: the parsers differ).

Anything else raises :class:`Unsure`, as does any error of the native parser (a
duplicate key included): the caller then takes the exact way, which finds and
locates every problem.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date, time
from functools import cache
from typing import Any

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.limits import MAX_DEPTH, MAX_INT_DIGITS

__all__ = ["NATIVE_FROM", "Unsure", "native_cases"]

NATIVE_FROM = 1 << 18
"""The size of a ``cases:`` list (characters) from which the native parser reads it: a
smaller one takes the exact way in milliseconds."""


class Unsure(Exception):
    """The fast path does not vouch for this document: parse it the exact way."""


Resolve = Callable[[str], Any]
"""A plain scalar's value as PyYAML's safe loader resolves it (:class:`Unsure` if odd)."""
Written = dict[tuple[type, Any], "str | None"]
Exact = Callable[[str], tuple[Any, Written]]
"""A document's data and written texts the exact way (:class:`Unsure` if in doubt)."""
Span = tuple[str, int, int]
"""A text, and the start and end of the part of it meant."""

_CASES = re.compile(r"^cases:[ ]*(?:#[^\n]*)?\n(?=([ ]*)- )", re.MULTILINE)
_SUSPECT_START = frozenset("yYnNoOtTfF0123456789+-.~<=\n")
"""The first characters of the texts PyYAML resolves to something other than a string
(and of an empty block scalar's line breaks)."""
_RISKY_NUMBERS = [  # each starts with a literal: the engine skips to it
    re.compile(r"0(?<=[\s\[{,:+-]0)[0-9a-zA-Z_]"),  # 010, 0o10, 09, 0x1F, 0_1
    re.compile(r"e(?<=[0-9.]e)[-+]?[0-9]"),  # 1e3, 1.0e3, 1e+3
    re.compile(r"E(?<=[0-9.]E)[-+]?[0-9]"),
    re.compile(r"\+\.[0-9]"),  # +.5
    re.compile(r"-\.[0-9]"),
]
_KEY_LIMIT = 1024  # PyYAML refuses a longer implicit key
_INDENT_LIMIT = "\n" + " " * 400  # the native parser recurses per level: stay far from
_COMPACT_LIMIT = [  # its stack's end (it bounds flow collections itself)
    re.compile(rf"{first}(?:[ ]+[-?]){{63}}") for first in ("-", r"\?")
]
"""64 compact entries on a line (``- - - …``): nesting the indentation does not show."""
_REFUSED = (
    "\t",
    "\r",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\n%",
    "\n---",
    "\n...",
    _INDENT_LIMIT,
)
_PRINTABLE = bytes(range(32, 127)) + b"\n"


def native_cases(
    text: str, resolve: Resolve, exact: Exact
) -> tuple[int, int, list[Any], Written] | None:
    """``(start, end, cases, written)``: the top-level ``cases:`` block list at
    ``text[start:end]`` (its key's line included), its items as PyYAML's safe loader
    reads them, and the text of each non-string label; None when there is no such list
    worth reading natively. Raise :class:`Unsure` when the native parser cannot be
    vouched for."""
    key = 0 if text.startswith("cases:") else text.find("\ncases:") + 1
    found = _CASES.match(text, key) if key or text.startswith("cases:") else None
    if found is None:
        return None
    start, indent = found.start(), found.group(1)
    end = _block_end(text, found.end(), len(indent))
    if end - found.end() < NATIVE_FROM or "\ncases:" in text[end - 1 :]:
        return None  # small, or the key twice: the exact way
    items = (text, found.end(), end)  # no copy of a large text
    _check_text(items, resolve)
    with gc_paused():  # millions of containers, no cycles
        cases, written = _parse(items, indent, exact)
        _check_data(cases, items, resolve)
    return start, end, cases, written


def _block_end(text: str, start: int, indent: int) -> int:
    """Where the block list starting at ``start`` ends: the first line less indented
    than its items (``- `` at column 0: a line that is neither an item nor indented),
    blank lines and comments aside."""
    if indent:
        pattern = rf"\n(?!{' ' * indent}|[ ]*(?:#|\n|\Z))"
    else:
        pattern = r"\n(?![ ]|-[ \n]|[ ]*(?:#|\n|\Z))"
    after = re.compile(pattern).search(text, start - 1)
    return len(text) if after is None else after.start() + 1


def _parse(items: Span, indent: str, exact: Exact) -> tuple[list[Any], Written]:
    """Each ``- `` item parsed on its own (a split inside a quoted or flow scalar leaves
    one piece unclosed: a parse error, so the exact way). An item with a label (id, tag)
    that is not a string is read the exact way, which keeps the label's text (see
    ``dataset._labels_as_written``)."""
    import yaml_rs  # imported when a large list is read: it costs every start otherwise

    no_aliases = yaml_rs.AliasLimits(0, 0, 0)  # the exact way counts and bounds them
    # parse_datetime=False: it would read a quoted '2002-12-14' as a date too
    separator = f"\n{indent}- "
    cases: list[Any] = []
    written: Written = {}
    loads = yaml_rs.loads
    text, start, end = items
    try:
        while start < end:  # each piece with its last line's break (a `|+` keeps it)
            stop = text.find(separator, start, end) + 1 or end
            piece = text[start:stop]
            start = stop
            parsed = loads(piece, parse_datetime=False, alias_limits=no_aliases)
            if type(parsed) is not list:
                raise Unsure("not a list item")
            if not all(map(_plain_labels, parsed)):
                parsed, texts = exact(piece)
                for typed, spelled in texts.items():
                    written[typed] = spelled if written.get(typed, spelled) == spelled else None
            cases.extend(parsed)
    except Exception as exc:  # what it refuses (a duplicate key, bad YAML): the exact way
        raise Unsure(str(exc)[:80]) from None
    except BaseException as exc:  # a Rust panic is no Exception
        if type(exc).__name__ != "PanicException":
            raise
        raise Unsure(str(exc)[:80]) from None
    return cases, written


def _plain_labels(case: Any) -> bool:
    return type(case) is not dict or (
        type(case.get("id", "")) is str and all(type(tag) is str for tag in case.get("tags") or ())
    )


def _check_text(items: Span, resolve: Resolve) -> None:
    """What the data cannot show: the characters and lines refused, anchors and tags,
    numbers written as only YAML 1.1 or only YAML 1.2 reads them."""
    text, start, end = items
    for refused in _REFUSED:
        if text.find(refused, start, end) >= 0:
            raise Unsure(repr(refused)[:20])
    for compact in _COMPACT_LIMIT:
        if compact.search(text, start, end):
            raise Unsure("deep")
    if text.isascii():
        for at in range(start, end, 1 << 20):  # a megabyte at a time: no copy of it all
            if text[at : min(at + (1 << 20), end)].encode().translate(None, _PRINTABLE):
                raise Unsure("control character")
    elif _NOT_PRINTABLE.search(text, start, end):
        raise Unsure("control character")
    for mark in ("&", "!"):
        for position in _finds(mark, items):
            if _node_start(text, position):
                raise Unsure(f"{mark} at a node")
    tokens = {
        _token(text, m.start())
        for risky in _RISKY_NUMBERS
        for m in risky.finditer(text, start, end)
    }
    for token, where in tokens:
        if _node_start(text, where) and _node_end(text, where + len(token)):
            _same(token, resolve)


def _finds(needle: str, items: Span) -> Iterator[int]:
    text, start, end = items
    position = text.find(needle, start, end)
    while position >= 0:
        yield position
        position = text.find(needle, position + 1, end)


_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_TOKEN_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.:+-")


def _token(text: str, at: int) -> tuple[str, int]:
    """The run of number-like characters around ``at``, and where it starts."""
    start = at
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    end = at
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return text[start:end], start


def _node_start(text: str, at: int) -> bool:
    """Whether a node could start at ``at`` (a superset: the start of a line's content,
    after an indicator and spaces, or after a quoted key's ``:``)."""
    line = text.rfind("\n", 0, at) + 1
    before = text[line:at].rstrip(" ")
    return not before or before[-1] in "-?:[{,"


def _node_end(text: str, at: int) -> bool:
    """Whether a plain scalar could end at ``at`` (a superset, as :func:`_node_start`)."""
    end = text.find("\n", at)
    rest = text[at : len(text) if end < 0 else end].lstrip(" ")
    return not rest or rest[0] in "#,]}:"


def _check_data(cases: list[Any], items: Span, resolve: Resolve) -> None:
    """One walk over the data: the values and keys that need a second look."""
    suspects: set[str] = set()
    stack: list[tuple[Any, int]] = [(cases, 2)]  # the dataset's mapping is level 1
    pop, push, starts = stack.pop, stack.append, _SUSPECT_START
    while stack:
        node, depth = pop()
        if depth >= MAX_DEPTH:
            raise Unsure("deep")
        if type(node) is dict:
            values: Iterable[Any] = node.values()
            for key in node:
                if type(key) is not str or len(key) > _KEY_LIMIT:
                    raise Unsure("key")
                if key[:1] in starts:
                    suspects.add(key)
        else:
            values = node
        for value in values:
            kind = type(value)
            if kind is str:
                if value[:1] in starts:
                    suspects.add(value)
            elif kind is dict or kind is list:
                push((value, depth + 1))
            elif kind is float:
                if not math.isfinite(value):
                    raise Unsure("not finite")
            elif kind is int:
                if value.bit_length() > MAX_INT_DIGITS * 3:
                    raise Unsure("huge")
            elif kind is not bool and value is not None:
                raise Unsure(kind.__name__)  # a date, a time, bytes
    for text in suspects:
        _plain_string(text, items, resolve)


def _plain_string(text: str, items: Span, resolve: Resolve) -> None:
    """A string that, written unquoted, YAML 1.2 reads as a string and PyYAML as
    something else, must be quoted wherever it stands."""
    if not text.strip("\n"):  # an empty block scalar at a piece's end: "" or "\n"?
        raise Unsure("line breaks only")
    if "\n" in text or (" " in text and not text[0].isdigit()):
        return  # no plain scalar ends with a line break; only a timestamp has a space
    try:
        if type(_native(text)) is not str:
            return  # unquoted, it would not be this string here: it was quoted
    except Unsure:
        return  # unquoted, it would not parse
    try:
        if type(_exact(text, resolve)) is str:
            return
    except Unsure:
        pass  # `<<`, `=`: special to PyYAML unquoted
    for position in _finds(text, items):
        if _node_start(items[0], position) and _node_end(items[0], position + len(text)):
            raise Unsure(f"plain {text[:20]!r}")


def _same(token: str, resolve: Resolve) -> None:
    exact, native = _exact(token, resolve), _native(token)
    if type(exact) is not type(native) or repr(exact) != repr(native):
        raise Unsure(token[:20])
    if isinstance(exact, (date, time)):
        raise Unsure(token[:20])


def _exact(text: str, resolve: Resolve) -> Any:
    try:
        return resolve(text)
    except Unsure:
        raise
    except Exception as exc:  # PyYAML's own, on a text no plain scalar has ("yes\n")
        raise Unsure(text[:20]) from exc


@cache
def _native(text: str) -> Any:
    """How the native parser resolves ``text`` written plain (Unsure where it fails)."""
    import yaml_rs

    try:
        parsed: Any = yaml_rs.loads(f"- {text}\n", parse_datetime=False)
        return parsed[0]
    except Exception:
        raise Unsure(text[:20]) from None
    except BaseException as exc:  # a Rust panic (see _parse)
        if type(exc).__name__ != "PanicException":
            raise
        raise Unsure(text[:20]) from None
