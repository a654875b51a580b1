"""Loading YAML/JSON documents with line numbers, and validating them.

Every problem is a :class:`Problem` pointing at the offending node
(``file:line:col: message``), all problems at once. Messages speak the
user's language: "did you mean", "quote the pattern", YAML 1.1 booleans.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import yaml
from yaml.events import (
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from signal_eval_cli.assertions.documents import document_problems, plugin_schema
from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem, at_byte, closest, shorten, undecodable
from signal_eval_cli.files import read_input
from signal_eval_cli.json_events import json_events
from signal_eval_cli.limits import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    JsonProblem,
    loads_json,
    no_finite_number,
)
from signal_eval_cli.quick_yaml import QuickData, Unsure, quick_data
from signal_eval_cli.schema_check import (
    SCHEMA_DIR,
    failing_items,
    schema_check,
    schema_documents,
)

if TYPE_CHECKING:  # imported when a document has a problem to word (it takes a while)
    import jsonschema

__all__ = [
    "SCHEMA_DIR",
    "Document",
    "explain_error",
    "is_json",
    "load_document",
    "lone_surrogate_problems",
    "parse_document",
    "schema_problems",
    "schema_validator",
    "validate_document",
]

JsonPath = tuple[str | int, ...]
_YAML11_BOOLEANS = {"yes", "no", "on", "off", "y", "n", "true", "false"}
_NO_KEY = object()  # a mapping being located waits for its next key


@dataclass(frozen=True, slots=True)
class Location:
    line: int
    column: int
    text: str | None = None  # the raw scalar, when it was a plain (unquoted) scalar


@dataclass
class Document:
    """Parsed data plus where each value and key stood in the file.

    Read by the fast path, a document keeps its ``source`` text instead, and finds the
    locations a problem needs when it needs them (see :meth:`locate`)."""

    path: str
    data: Any
    values: dict[JsonPath, Location]
    keys: dict[JsonPath, Location]
    source: str | None = None
    quick: QuickData | None = None
    located: set[JsonPath] = dataclass_field(default_factory=set)
    """The subtrees (a path's first two steps) whose locations the tables hold."""
    syntax: Literal["yaml", "json"] = "yaml"
    """How ``source`` is read when locating: ``yaml``, or ``json`` (see :mod:`.json_events`)."""
    mappings: list[dict[str, Any]] | None = None
    """Every mapping in ``data`` as the fast path parsed it, in no particular order (None:
    not kept): what a check of each mapping that needs no path reads instead of walking
    ``data`` (see :func:`.assertions.documents.document_problems`). What may change
    ``data`` before it is checked (a dataset's labels) changes scalars only."""

    def as_written(self, paths: list[JsonPath]) -> list[str | None]:
        """The text of the plain (unquoted) scalar at each path, as the file has it (in
        a JSON file: as JSON writes its value). What the parse did not keep is located,
        all of it in one pass."""
        known = [self._known_text(path) for path in paths]
        self.locate(path for path, text in zip(paths, known, strict=True) if text is None)
        return [
            self.at(path).text if text is None else text
            for path, text in zip(paths, known, strict=True)
        ]

    def _known_text(self, path: JsonPath) -> str | None:
        if self.source is None:  # the tables hold every location
            return None
        value: Any = self.data
        for token in path:
            value = value[token]
        if self.syntax == "json":  # a string is quoted: it has no plain text
            return None if isinstance(value, dict | list | str) else json.dumps(value)
        return self.quick.as_written(value) if self.quick is not None else None

    def locate(self, paths: Iterable[JsonPath]) -> None:
        """Find the locations of everything under the first two steps of each path, in
        one pass over the source: a 100,000-case dataset with a few bad cases records
        those cases' locations only, not a table of millions. Ask for all the paths of a
        batch of problems at once."""
        if self.source is None:
            return
        wanted = {path[:2] for path in paths} - self.located
        if wanted:
            events: Callable[[], Any]
            if self.syntax == "json":
                events = json_events(self.source, self.path).__next__
            else:  # read in chunks: given the text, libyaml holds all of it again as
                events = _Events(_Chunks(self.source)).get_event  # UTF-8 (54 MB at 100k)
            _locate(events, wanted, self.values, self.keys)
            self.located |= wanted

    def at(self, path: JsonPath, *, key: bool = False) -> Location:
        """The location of ``path``, else of its nearest ancestor."""
        self.locate([path])
        table = self.keys if key else self.values
        while path:
            if path in table:
                return table[path]
            if key and path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), Location(1, 1))

    def problem(self, path: JsonPath, message: str, *, key: bool = False) -> Problem:
        where = self.at(path, key=key)
        return Problem(self.path, where.line, where.column, message)

    def problems(self, found: Iterable[tuple[JsonPath, str]]) -> list[Problem]:
        """``(path, message)`` pairs as problems, located in one pass."""
        found = list(found)
        self.locate(path for path, _ in found)
        return [self.problem(path, message) for path, message in found]


class _Chunks:
    """``text`` as a stream, which the parser reads a chunk at a time, so that locating
    a node near the top of a large file costs no copy of the whole of it."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def read(self, size: int = -1, /) -> str:
        size = len(self.text) if size < 0 else size
        chunk = self.text[self.at : self.at + size]
        self.at += len(chunk)
        return chunk


def _locate(
    get: Callable[[], Any],
    wanted: set[JsonPath],
    values: dict[JsonPath, Location],
    keys: dict[JsonPath, Location],
) -> None:
    """Record into ``values`` and ``keys`` the locations of the top level and of the
    subtrees at the two-step paths in ``wanted``, from the document's events (``get``
    gives the next: no nodes, no table of the rest), and stop once every wanted path is
    passed. The document parsed cleanly on a fast path: no aliases, every key a string."""
    get(), get()  # the stream and the document start
    left = set(wanted)
    # per open container: its path, whether it is inside a wanted subtree, and its
    # pending key (a mapping) or next index (a list)
    open_: list[list[Any]] = []
    while left:
        event = get()
        kind = type(event)
        if kind is MappingEndEvent or kind is SequenceEndEvent:
            left.discard(open_.pop()[0])
            if not open_:
                return
            continue
        path: JsonPath = ()
        inside = False
        if open_:
            parent, inside, step = open_[-1]
            if step is _NO_KEY:  # a mapping's key
                path = (*parent, event.value)
                open_[-1][2] = event.value
                if inside or len(path) <= 1 or path in wanted:
                    keys[path] = _event_location(event)
                continue
            path = (*parent, step)
            open_[-1][2] = _NO_KEY if type(step) is str else step + 1
            inside = inside or (len(path) == 2 and path in wanted)
        if inside or len(path) <= 1:
            values[path] = _event_location(event)
            if len(path) < 2:  # wanted for itself, not for its subtree
                left.discard(path)
        if kind is ScalarEvent:
            left.discard(path)
            if not open_:
                return
        else:
            open_.append([path, inside, _NO_KEY if kind is MappingStartEvent else 0])


def _event_location(event: Any) -> Location:
    mark = event.start_mark
    plain = type(event) is ScalarEvent and not event.style  # libyaml says "", not None
    return Location(mark.line + 1, mark.column + 1, event.value if plain else None)


# -- parsing --------------------------------------------------------------------------


def load_document(path: str | Path, *, lone_surrogates: bool = False) -> Document:
    """Read a YAML or JSON file; raise :class:`InputError` for anything unreadable.
    ``lone_surrogates``: take a JSON string's half surrogate pair as it is, as the
    readers of results and traces do (see :func:`lone_surrogate_problems`)."""
    name = str(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InputError([Problem(name, 0, 0, f"cannot read file: {exc.strerror}")]) from None
    nul = raw.find(b"\0")
    if nul >= 0:  # located: one stray NUL in a text file is found, not searched for
        raise InputError(
            [at_byte(name, raw, nul, "binary file (a NUL byte): expected YAML or JSON text")]
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([undecodable(name, exc, "not UTF-8 text")]) from None
    del raw  # a large file's bytes need not stay beside its text and data
    if not text or text.isspace():  # (no stripped copy of a large text)
        raise InputError([Problem(name, 1, 1, "file is empty")])
    if is_json(name):
        return _json_document(name, text, lone_surrogates)
    try:
        quick = quick_data(text)
    except Unsure:  # something to report, or rare enough to take the slow, located way
        return parse_yaml(text, name)
    if quick.duplicates:
        raise InputError(
            [Problem(name, line, column, _duplicate(key)) for line, column, key in quick.duplicates]
        )
    return Document(name, quick.data, {}, {}, source=text, quick=quick, mappings=quick.mappings)


def is_json(name: str | Path) -> bool:
    """Whether a file is read as JSON (its name says so), not as YAML."""
    return str(name).lower().endswith(".json")


def parse_document(text: str, name: str) -> Document:
    """``text`` as :func:`load_document` reads the file ``name``: JSON, or located YAML."""
    return _json_document(name, text) if is_json(name) else parse_yaml(text, name)


def _json_document(name: str, text: str, lone_surrogates: bool = False) -> Document:
    """A ``.json`` file read as JSON, not as YAML 1.1 (see :mod:`.json_events`), with
    the problems a YAML file would have: duplicate keys, and text JSON cannot hold."""
    mappings: list[dict[str, Any]] = []
    add = mappings.append

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping = dict(pairs)
        if len(mapping) != len(pairs):
            raise _DuplicateKey
        add(mapping)
        return mapping

    try:
        try:
            with gc_paused():  # millions of containers, no cycles: see collector
                data = loads_json(text, object_pairs_hook=unique_keys)
        except _DuplicateKey:  # met while parsing: what follows may not be JSON at all
            loads_json(text)  # (the events that locate the keys need JSON)
            raise InputError(_json_duplicates(name, text)) from None
    except JsonProblem as exc:
        raise InputError([Problem(name, exc.line, exc.column, exc.message)]) from None
    document = Document(name, data, {}, {}, source=text, syntax="json", mappings=mappings)
    if not lone_surrogates and (problems := lone_surrogate_problems(document)):
        raise InputError(problems)
    return document


class _DuplicateKey(Exception):
    """A JSON object names a key twice (found again, with its place, by events)."""


def _json_duplicates(name: str, text: str) -> list[Problem]:
    problems = []
    # per open container: the keys it has (None: a list), and whether a key comes next
    open_: list[list[Any]] = []
    for event in json_events(text, name):
        kind = type(event)
        if kind is MappingEndEvent or kind is SequenceEndEvent:
            open_.pop()
            continue
        if open_ and open_[-1][0] is not None:
            keys, expects_key = open_[-1]
            open_[-1][1] = not expects_key
            if expects_key:  # JSON's keys are strings
                key = cast(ScalarEvent, event).value
                if key in keys:
                    where = _event_location(event)
                    problems.append(Problem(name, where.line, where.column, _duplicate(key)))
                keys.add(key)
                continue
        if kind is MappingStartEvent:
            open_.append([set(), True])
        elif kind is SequenceStartEvent:
            open_.append([None, False])
    return problems


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate_problems(document: Document) -> list[Problem]:
    """A JSON document's strings whose ``\\uD800``-``\\uDFFF`` escapes are no pair: valid
    JSON, but no character, so no file a user writes (a dataset, a matrix) means one. A
    results file or a trace may hold one (a model's stream cut inside an emoji, written
    escaped), and their readers take it as it is."""
    name, text = document.path, document.source
    if document.syntax != "json" or text is None or not _SURROGATE_ESCAPE.search(text):
        return []
    problems = []
    for event in json_events(text, name):
        if type(event) is ScalarEvent and event.style:
            try:
                event.value.encode("utf-8")
            except UnicodeEncodeError:
                where = _event_location(event)
                problems.append(Problem(name, where.line, where.column, _HALF_PAIR))
    return problems


_HALF_PAIR = (
    "a \\u escape of half a UTF-16 surrogate pair (\\ud800-\\udfff) with no other half: "
    "it is no character; write the character itself"
)
"""Why JSON's ``"\\ud83d"`` alone, or YAML's, is refused."""

_UNICODE_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


def _escape_problem(source: str, column: int) -> tuple[int, str] | None:
    """libyaml's "found invalid Unicode character escape code" (at the digits of the
    escape in ``source``, its line), said as what the escape is, at its backslash: half
    a surrogate pair, a pair written as two escapes (which JSON joins and YAML does not),
    or a code past the last character. ``None`` when no such escape stands there."""
    start = column - 3  # the backslash, before "u" and the digits' first column
    escape = _UNICODE_ESCAPE.match(source, max(start, 0))
    if start < 0 or escape is None:
        return None
    code = int(escape[1] or escape[2], 16)
    if code > 0x10FFFF:
        return start + 1, f"{escape[0]} is past the last Unicode character (\\U0010FFFF)"
    after = _UNICODE_ESCAPE.match(source, escape.end())
    low = int(after[1] or after[2], 16) if after else 0
    if 0xD800 <= code <= 0xDBFF and 0xDC00 <= low <= 0xDFFF and after:
        joined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        return start + 1, (
            f"{escape[0]}{after[0]} is a UTF-16 surrogate pair, which YAML reads as two "
            "halves of a character, each none (JSON joins them; YAML does not): write the "
            f"character itself, or \\U{joined:08X}"
        )
    return start + 1, _HALF_PAIR


class _PyEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python event parser, for an install without libyaml."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


try:  # libyaml scans in linear time; the pure-Python scanner is quadratic on a long scalar
    from yaml._yaml import CParser as _Events
except ImportError:  # pragma: no cover - PyYAML wheels ship libyaml
    _Events = _PyEvents  # type: ignore[misc,assignment]


class _BoundedLoader(
    yaml.composer.Composer, _Events, yaml.constructor.SafeConstructor, yaml.resolver.Resolver
):
    """A safe loader that refuses, at the offending node, what would hang or exhaust us:
    nesting deeper than MAX_DEPTH, aliases expanding past MAX_ALIAS_NODES (a
    "billion laughs" document is small as a graph, huge as a tree), recursive aliases,
    integers past MAX_INT_DIGITS, and non-finite floats."""

    def __init__(self, text: str) -> None:
        _Events.__init__(self, text)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.depth = 0
        self.alias_nodes = 0
        self.open_anchors: set[str] = set()
        self.sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node:
        event = cast(yaml.Event, self.peek_event())
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                raise _composer_error(f"alias *{event.anchor} refers to itself", event)
            node = cast(yaml.Node, super().compose_node(parent, index))
            self.alias_nodes += self._size(node)
            if self.alias_nodes > MAX_ALIAS_NODES:
                raise _composer_error(
                    f"aliases expand to more than {MAX_ALIAS_NODES:,} values "
                    "(the document is far larger than the file)",
                    event,
                )
            return node
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _composer_error(f"nested deeper than {MAX_DEPTH} levels", event)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self.open_anchors.add(anchor)
        try:
            return cast(yaml.Node, super().compose_node(parent, index))
        finally:
            self.depth -= 1
            self.open_anchors.discard(anchor or "")

    def _size(self, root: yaml.Node) -> int:
        """How many values ``root`` stands for once its aliases are expanded (memoised:
        each node of the graph is visited once)."""
        sizes = self.sizes
        stack: list[tuple[yaml.Node, bool]] = [(root, False)]
        while stack:
            node, children_done = stack.pop()
            if id(node) in sizes:
                continue
            children = _children(node)
            if children_done:
                sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in sizes)
        return sizes[id(root)]

    def construct_bounded_int(self, node: yaml.ScalarNode) -> int:
        if len(str(node.value)) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"integer of {len(node.value):,} digits (at most {MAX_INT_DIGITS})",
                node.start_mark,
            )
        return self.construct_yaml_int(node)

    def construct_finite_float(self, node: yaml.ScalarNode) -> float:
        value = self.construct_yaml_float(node)
        if math.isfinite(value):
            return value
        message = no_finite_number(str(node.value))
        raise _BoundError(None, None, message, node.start_mark)

    def construct_checked_timestamp(self, node: yaml.ScalarNode) -> object:
        try:
            return self.construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"invalid date/time {node.value!r}: {exc}", node.start_mark
            ) from None


_BoundedLoader.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:int", _BoundedLoader.construct_bounded_int
)
_BoundedLoader.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:float", _BoundedLoader.construct_finite_float
)
_BoundedLoader.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:timestamp", _BoundedLoader.construct_checked_timestamp
)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _BoundError(yaml.composer.ComposerError):
    """A limit of :class:`_BoundedLoader` passed (reported as is, with no alias hint)."""


def _composer_error(message: str, event: yaml.Event) -> yaml.MarkedYAMLError:
    return _BoundError(None, None, message, cast(Any, event.start_mark))


def parse_yaml(text: str, name: str = "<string>") -> Document:
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError([Problem(name, 1, 1, "file is empty")])
        data = loader.construct_document(node)
    except yaml.reader.ReaderError as exc:  # a control character anywhere in the text
        line, column = _line_col(text, exc.position)
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        message = (
            f"control character {char!r} is not allowed in YAML; "
            f'write it escaped inside double quotes, e.g. "\\x{ord(char):02x}"'
        )
        raise InputError([Problem(name, line, column, message)]) from None
    except yaml.MarkedYAMLError as exc:
        raise InputError([_yaml_problem(name, exc, text)]) from None
    except yaml.YAMLError as exc:
        raise InputError([Problem(name, 1, 1, f"invalid YAML: {exc}")]) from None
    except RecursionError:  # a bound above should have caught it first
        raise InputError([Problem(name, 1, 1, f"nested deeper than {MAX_DEPTH} levels")]) from None
    finally:
        loader.dispose()
    values: dict[JsonPath, Location] = {}
    keys: dict[JsonPath, Location] = {}
    problems: list[Problem] = []
    _index(node, (), values, keys, problems, name, set())
    if problems:
        raise InputError(problems)
    return Document(name, data, values, keys)


def _location(node: yaml.Node) -> Location:
    mark = node.start_mark
    plain = isinstance(node, yaml.ScalarNode) and not node.style  # libyaml says "", not None
    return Location(mark.line + 1, mark.column + 1, node.value if plain else None)


def _index(
    node: yaml.Node,
    path: JsonPath,
    values: dict[JsonPath, Location],
    keys: dict[JsonPath, Location],
    problems: list[Problem],
    name: str,
    seen_nodes: set[int],
) -> None:
    """Record where each value stands; a node reached again through an alias is not
    walked again (its values keep the location of the alias' ancestors)."""
    values[path] = _location(node)
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            # The constructor flattened `<<: *anchor` merges into node.value, merged keys
            # first; they come from the anchor (earlier in the file) and may be overridden.
            if key_node.start_mark.index >= node.start_mark.index:  # written here, not merged
                if key in seen:
                    where = _location(key_node)
                    problems.append(Problem(name, where.line, where.column, _duplicate(key)))
                seen.add(key)
            keys[(*path, key)] = _location(key_node)
            _index(value_node, (*path, key), values, keys, problems, name, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*path, i), values, keys, problems, name, seen_nodes)


def _duplicate(key: str) -> str:
    return f"duplicate key '{key}'"


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _yaml_problem(name: str, exc: yaml.MarkedYAMLError, text: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    if isinstance(exc, _BoundError):
        return Problem(name, line, column, str(exc.problem))
    message = f"invalid YAML: {exc.problem or exc.context}"
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    escape = _escape_problem(source, column) if "escape code" in message else None
    if escape is not None:
        return Problem(name, line, escape[0], escape[1])
    star = source.rfind("*", 0, column)
    if star >= 0 and ("alias" in message or star >= column - 3):
        while star > 0 and source[star - 1] == "*":
            star -= 1
        column = star + 1
        message += (
            " — a value starting with '*' is read as a YAML alias: quote the pattern, "
            'e.g. pattern: "*:complete"'
        )
    elif source[column - 1 : column] == "\t":
        message += " — a tab: YAML indents with spaces only (an editor may have put it there)"
    return Problem(name, line, column, message)


# -- schema validation --------------------------------------------------------------------


@cache
def _registry(generated: str | None = None) -> Any:
    from referencing import Registry, Resource

    resources = []
    for name, contents in schema_documents(generated).items():
        resource = Resource.from_contents(contents)
        resources.append((name, resource))
        resources.append((contents["$id"], resource))
    return Registry().with_resources(resources)


@cache
def schema_validator(name: str, generated: str | None = None) -> jsonschema.Draft202012Validator:
    """The validator for ``schemas/<name>.schema.json``, with every sibling schema resolvable
    (with ``generated``: plugins' types too, see :func:`.schema_check.schema_documents`)."""
    import jsonschema

    contents = schema_documents(generated)[f"{name}.schema.json"]
    return jsonschema.Draft202012Validator(contents, registry=_registry(generated))


def validate_document(doc: Document, schema: str) -> list[Problem]:
    """Schema problems plus the checks a schema cannot express (globs, regexes).

    A quick compiled check vouches for the valid documents; only a document it does not
    vouch for is walked by jsonschema, for the located and worded problems."""
    with gc_paused():  # no cycles made; a full collection would walk the whole document
        return _validate_document(doc, schema)


def _validate_document(doc: Document, schema: str) -> list[Problem]:
    problems = []
    valid = schema_check(schema)(doc.data)
    plugins = None if valid else plugin_schema(doc.data)
    if plugins is not None:
        valid = schema_check(schema, plugins)(doc.data)
    if not valid:
        problems = schema_problems(doc, schema, plugins)
    problems.extend(_semantic_problems(doc))  # on the well-typed parts: all problems at once
    return _unique(problems)


def schema_problems(doc: Document, schema: str, generated: str | None = None) -> list[Problem]:
    """``doc``'s located problems against ``schemas/<schema>.schema.json`` (with
    ``generated``: see :func:`.schema_check.schema_documents`), from jsonschema: ask
    only of a document the quick check does not vouch for (it takes a while)."""
    data, kept = failing_items(schema, doc.data, generated)

    def path_of(error: jsonschema.ValidationError) -> JsonPath:
        path = tuple(error.absolute_path)
        if len(path) > 1 and path[0] in kept and isinstance(path[1], int):
            return (path[0], kept[str(path[0])][path[1]], *path[2:])
        return path

    errors = list(schema_validator(schema, generated).iter_errors(data))
    doc.locate(path_of(error) for error in errors)
    return [p for error in errors for p in explain_error(doc, error, path_of)]


def _unique(problems: list[Problem]) -> list[Problem]:
    seen: dict[tuple[int, int, str], Problem] = {}
    for p in problems:
        seen.setdefault((p.line, p.column, p.message), p)
    return sorted(seen.values(), key=lambda p: (p.line, p.column))


_TYPE_NAMES = {
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def kind_of(value: Any) -> str:
    """What a parsed value is, in a message's words: "a string", "a whole number", …"""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    for json_type, python in (("string", str), ("integer", int), ("number", float)):
        if isinstance(value, python):
            return _TYPE_NAMES[json_type]
    return "a mapping" if isinstance(value, Mapping) else "a list"


def explain_error(
    doc: Document,
    error: jsonschema.ValidationError,
    path_of: Callable[[jsonschema.ValidationError], JsonPath],
) -> Iterator[Problem]:
    """Turn one jsonschema error into located, actionable problems (``path_of``: the
    error's path in ``doc``)."""
    schema: Any = error.schema
    rule: Any = error.validator_value
    path = path_of(error)
    if error.validator in ("allOf", "if", "then", "else") and error.context:
        for sub in error.context:
            yield from explain_error(doc, sub, path_of)
        return
    where = _describe_owner(doc.data, path)
    if error.validator == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        for extra in sorted(set(cast(Mapping[str, Any], error.instance)) - set(allowed)):
            guess = closest(extra, allowed)
            hint = f" — did you mean '{guess}'?" if guess else f" (allowed: {', '.join(allowed)})"
            yield doc.problem(
                (*path, extra), f"unknown field '{shorten(extra)}'{where}{hint}", key=True
            )
        return
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        yield doc.problem(path, f"missing required field '{missing}'{where}")
        return
    if error.validator == "enum" and path and path[-1] == "type":
        known = list(rule)
        guess = closest(str(error.instance), known)
        hint = f" — did you mean '{guess}'?" if guess else f"; known types: {', '.join(known)}"
        yield doc.problem(path, f"unknown assertion type '{shorten(str(error.instance))}'{hint}")
        return
    if error.validator == "type":
        wanted = rule
        wanted_list = wanted if isinstance(wanted, list) else [wanted]
        expected = " or ".join(_TYPE_NAMES.get(str(w), str(w)) for w in wanted_list)
        message = f"expected {expected}, got {kind_of(error.instance)}"
        raw = doc.at(path).text
        if "string" in wanted_list and raw is not None and raw.lower() in _YAML11_BOOLEANS:
            message += f' — YAML reads unquoted {raw} as a boolean; quote it: "{raw}"'
        elif "string" in wanted_list and raw is not None:
            message += f' — quote it: "{raw}"'
        elif raw is not None and raw == error.instance:  # an unquoted scalar read as text
            message += _number_hint(raw, wanted_list)
        yield doc.problem(path, f"{_field(path)}{message}")
        return
    if error.validator in ("anyOf", "oneOf"):  # jsonschema's message would print the value
        yield doc.problem(
            path, f"{_field(path)}{kind_of(error.instance)} that matches none of the allowed forms"
        )
        return
    yield doc.problem(path, f"{_field(path)}{error.message}")


def _yaml11_number(text: str, wanted: list[Any]) -> str | None:
    """``text`` (``1e-3``, ``5E4``: YAML 1.1 wants a dot and a signed exponent, else it is
    text) as a number PyYAML reads (a whole one where ``wanted`` is an integer), if it is
    a finite number at all."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if "integer" in wanted and value.is_integer():
        return str(int(value))
    mantissa, exponent, power = repr(value).partition("e")
    return f"{mantissa}.0e{power}" if exponent and "." not in mantissa else repr(value)


def _number_hint(text: str, wanted: list[Any]) -> str:
    """What to write instead of ``text``, an unquoted scalar YAML read as text where a
    number is ``wanted`` (see :func:`_yaml11_number`), or why no number can hold it."""
    number = _yaml11_number(text, wanted)
    if number is not None:
        return f" — YAML reads unquoted {text} as text: write {number}"
    try:
        value = float(text)
    except ValueError:
        return ""
    return f" — {no_finite_number(text)}" if not math.isfinite(value) else ""


def _field(path: JsonPath) -> str:
    return f"'{path[-1]}': " if path and isinstance(path[-1], str) else ""


def _describe_owner(data: Any, path: JsonPath) -> str:
    """`` (in signal.count)`` when ``path`` is inside an assertion, for context."""
    node = data
    owner = None
    for token in path:
        if isinstance(node, Mapping) and isinstance(node.get("type"), str):
            owner = node["type"]
        try:
            node = node[token]
        except (KeyError, IndexError, TypeError):
            break
    if isinstance(node, Mapping) and isinstance(node.get("type"), str):
        owner = node["type"]
    return f" in {owner}" if owner else ""


# -- checks beyond the schema -----------------------------------------------------------------


def _semantic_problems(doc: Document) -> list[Problem]:
    """Checks a schema cannot express, of the document's assertions (see
    :mod:`.assertions.documents`)."""
    return doc.problems(document_problems(doc.data, doc.mappings))
