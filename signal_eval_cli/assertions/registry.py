"""The assertion registry: each ``type`` string's :class:`AssertionType`.

A type is one decorated check beside its family: ``@assertion("output.contains",
options=TextOptions)`` gives its fields (a ``TypedDict`` the check takes, see
:mod:`.options`), its load-time checks and what it needs to run (a judge, a scenario's
workspace). The loader, the scenario model and the runner read those here;
``schemas/assertions.schema.json`` is generated from them
(:mod:`signal_eval_cli.assertions.schema`).

Built-in types register when their family modules are first needed. A plugin's types
register when the entry points of the ``signal_eval.assertions`` group are loaded, which
happens only once a dataset or a lookup names a type nobody registered: reading every
installed distribution's metadata takes a while, and most runs never need it. An unknown
``type`` raises :class:`UnknownAssertionType` — never a silent pass.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.options import options_schema
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.errors import InputError, UnknownAssertionType

__all__ = [
    "ENTRY_POINT_GROUP",
    "Assertion",
    "AssertionType",
    "Check",
    "Problems",
    "assertion",
    "definitions",
    "is_builtin",
    "known_types",
    "load_plugins",
    "lookup",
    "resolve",
    "uses_judge",
    "uses_regex",
]

ENTRY_POINT_GROUP = "signal_eval.assertions"
"""The entry-point group a package registers its assertion types in: each entry point
names a module (or an object in one) whose ``@assertion`` checks register on import."""

Assertion = Mapping[str, Any]
Check = Callable[[Assertion, EvalContext], Outcome]
OptionsT = TypeVar("OptionsT", bound=Mapping[str, Any])
"""An options class: the mapping a check takes."""
Problems = Callable[[Assertion], Iterable[tuple[tuple[str | int, ...], str]]]
"""Load-time checks of one assertion: ``(path inside the assertion, message)`` pairs."""


@dataclass(frozen=True, slots=True)
class AssertionType:
    """One assertion type: what the check, the schema, the loader and the runner know of it."""

    name: str
    check: Check
    schema: Mapping[str, Any] | None = None
    """The assertion mapping's JSON Schema keywords, ``type`` left out (``required`` lists
    the other required fields; ``properties`` all but ``type``): derived from ``options``
    when it is given. None: any fields, only ``type`` is checked."""
    options: type[Any] | None = None
    """The ``TypedDict`` the check takes: its fields and their docs."""
    problems: Problems | None = None
    """What the schema cannot express (a regex that does not compile, …), found at load."""
    needs_judge: bool = False
    """The check asks ``ctx.judge``: a run gives it one, and evaluates it off the loop."""
    workspace: bool = False
    """A scenario's pattern assertion: it reads the files a run left in its workspace."""

    @property
    def doc(self) -> str:
        """The first line of the check's docstring: what the type asserts."""
        return (self.check.__doc__ or "").strip().split("\n", 1)[0]


_TYPES: dict[str, AssertionType] = {}


def assertion(
    type_name: str,
    *,
    options: type[OptionsT] | None = None,
    schema: Mapping[str, Any] | None = None,
    problems: Problems | None = None,
    needs_judge: bool = False,
    workspace: bool = False,
) -> Callable[
    [Callable[[OptionsT, EvalContext], Outcome]], Callable[[OptionsT, EvalContext], Outcome]
]:
    """Register ``check`` as the evaluator of assertions with ``type: type_name``.

    ``options`` is the ``TypedDict`` of the assertion's fields, which the check takes: a
    dataset using the type is checked against the schema derived from it (see
    :mod:`.options`), located, like a built-in type's. ``schema`` adds JSON Schema keywords
    across fields (``{"anyOf": [{"required": ["from"]}, {"required": ["to"]}]}``); without
    ``options`` it gives all of them (``{"required": [...], "properties": {...}}``).
    ``problems`` adds load-time checks beyond the schema."""
    keywords = _keywords(type_name, options, schema)

    def register(
        check: Callable[[OptionsT, EvalContext], Outcome],
    ) -> Callable[[OptionsT, EvalContext], Outcome]:
        if type_name in _TYPES:
            raise ValueError(f"assertion type {type_name!r} is registered twice")
        _TYPES[type_name] = AssertionType(
            name=type_name,
            check=cast(Check, check),
            schema=keywords,
            options=options,
            problems=problems,
            needs_judge=needs_judge,
            workspace=workspace,
        )
        return check

    return register


def _keywords(
    type_name: str, options: type[Any] | None, schema: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The type's JSON Schema keywords: its options' fields, then ``schema``'s."""
    if options is None:
        return schema
    clash = {"required", "properties"} & set(schema or ())
    if clash:
        raise ValueError(f"assertion type {type_name!r}: {sorted(clash)} come from options=")
    try:
        return {**options_schema(options), **(schema or {})}
    except TypeError as exc:
        raise TypeError(f"assertion type {type_name!r}: {exc}") from None


def definitions() -> Mapping[str, AssertionType]:
    """Every registered type by name: the built-in ones in :data:`FAMILIES` order (however
    their modules happened to be imported), then the others (plugins, ``@assertion`` from
    Python) as they registered."""
    _load_families()
    return {kind.name: kind for kind in sorted(_TYPES.values(), key=_family_rank)}


def is_builtin(kind: AssertionType) -> bool:
    """Whether ``kind`` is one of this package's (the committed schemas know it)."""
    return _family_rank(kind) < len(FAMILIES)


def _family_rank(kind: AssertionType) -> int:
    package, _, family = kind.check.__module__.rpartition(".")
    builtin = package == __package__ and family in FAMILIES
    return FAMILIES.index(family) if builtin else len(FAMILIES)


def resolve(names: Iterable[object]) -> Mapping[str, AssertionType]:
    """:func:`definitions`, with the plugins loaded first if one of ``names`` (types a
    document names) is registered by nobody yet."""
    found = definitions()
    if any(isinstance(name, str) and name not in found for name in names):
        load_plugins()
        return definitions()
    return found


def known_types() -> list[str]:
    """The names of the types registered so far, sorted."""
    return sorted(definitions())


def lookup(type_name: object) -> Check:
    """The check of ``type_name``; a name nobody registered loads the plugins first."""
    _load_families()
    found = _TYPES.get(type_name) if isinstance(type_name, str) else None
    if found is None and isinstance(type_name, str):
        found = resolve([type_name]).get(type_name)
    if found is None:
        raise UnknownAssertionType(type_name, sorted(_TYPES))
    return found.check


def uses_judge(value: Any) -> bool:
    """Whether any mapping in ``value`` (an assertion list, a dataset's cases, nested in
    compositions) has a type that needs a judge."""
    _load_families()
    judged = {kind.name for kind in _TYPES.values() if kind.needs_judge}

    def judged_type(node: Mapping[Any, Any]) -> bool:
        kind = node.get("type")
        return type(kind) is str and kind in judged

    return _any_mapping(value, judged_type)


def uses_regex(value: Any) -> bool:
    """Whether any mapping in ``value`` holds a user's regex (``output.matches``'s
    ``regex``, a ``matches`` matcher): a search may take its whole time budget (1 s),
    so ``run`` evaluates such assertions off the event loop, where that time would be
    charged to every other running case."""
    return _any_mapping(value, lambda node: "regex" in node or "matches" in node)


def _any_mapping(value: Any, wanted: Callable[[Mapping[Any, Any]], bool]) -> bool:
    """Whether ``wanted`` holds for any mapping in ``value``, nested at any depth. A loop,
    not a generator per value, and a parsed document's own containers (dicts, lists)
    told by their type before any ABC check: ``run`` asks it of every case, 100,000 of
    them in a large dataset."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        if kind is list:
            extend(node)
        elif kind is dict:
            if wanted(node):
                return True
            extend(node.values())
        elif kind in _LEAVES:
            continue
        elif isinstance(node, Mapping):
            if wanted(node):
                return True
            extend(node.values())
        elif isinstance(node, list):
            extend(node)
    return False


_LEAVES = frozenset({str, int, float, bool, type(None)})

FAMILIES = (
    "signal",
    "snapshot",
    "agent",
    "metric",
    "output",
    "tool",
    "grading",
    "judge",
    "compose",
    "files",
)
"""The built-in family modules, in the schema's order: ``assertions.schema.json`` lists the
types (and a "known types" message names them) in the order they register."""

_LOCK = threading.Lock()
_families_loaded = False
_plugins_loaded = False


def _load_families() -> None:
    """Import the :data:`FAMILIES` once; each registers its types on import.

    Threads (a judged run evaluates on several) must never see a half-filled registry:
    the flag is set only after the import completed, under a lock (a non-empty registry
    proves nothing: the first family module registers before the last is imported)."""
    global _families_loaded
    if _families_loaded:
        return
    with _LOCK:
        if not _families_loaded:
            for family in FAMILIES:
                importlib.import_module(f"signal_eval_cli.assertions.{family}")
            _families_loaded = True


def load_plugins() -> None:
    """Load the :data:`ENTRY_POINT_GROUP` entry points (once): their types register.

    A plugin that fails to load is an input error naming it, not a traceback."""
    global _plugins_loaded
    _load_families()
    with _LOCK:
        if _plugins_loaded:
            return
        _plugins_loaded = True
        import importlib.metadata

        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()
            except Exception as exc:
                raise InputError(
                    f"assertion plugin '{entry.name}' ({entry.value}, entry point group "
                    f"'{ENTRY_POINT_GROUP}'): loading it raised {type(exc).__name__}: {exc}"
                ) from None
