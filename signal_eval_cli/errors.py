"""The errors this package raises on purpose, under one root: :class:`EvalError`.

``except EvalError`` catches every one of them (and no bug of ours). Each is defined
beside the code that raises it, as a subclass of :class:`EvalError` (those that were
``ValueError`` s stay ``ValueError`` s too, so code that catches those still does):

* :class:`InputError` (here) — problems in files or arguments a user gave; every one a
  :class:`Problem` with ``file:line:col``; the CLI prints them all and exits 2, with no
  traceback. :class:`ParamError` locates one at a harness param.
* :class:`InvalidAssertion`, :class:`UnknownAssertionType` (here) — an assertion built in
  code that is malformed, or of a type nobody registered; :class:`CheckError` (here) — a
  check that raised (a plugin's bug), naming its type; a run records it as that
  assertion erring and goes on.
* :class:`IncompatibleResults` (here) — two results :func:`~signal_eval_cli.compare.compare`
  cannot gate; the CLI turns it into an :class:`InputError` (exit 2).
* ``providers.base.ProviderError`` — a model call that failed.
* ``judges.JudgeError`` — a judge that could not give a verdict.
* ``traces.source.TraceFormatError`` — a trace record an importer cannot read.
* ``regex_budget.RegexTimeout`` — a pattern that ran out of its time budget.
* ``scenarios.workspace.AgentTaskError``, ``scenarios.patching.PatchError``,
  ``scenarios.junit.JunitError`` — an agent task, patch or JUnit report that cannot be used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "MAX_SUGGEST_LENGTH",
    "CheckError",
    "EvalError",
    "IncompatibleResults",
    "InputError",
    "InvalidAssertion",
    "ParamError",
    "Problem",
    "UnknownAssertionType",
    "closest",
    "each_or_every_problem",
    "edit_distance",
    "shorten",
    "undecodable",
]


T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        if not self.file:
            return self.message
        if self.line <= 0:
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


def undecodable(file: str, error: UnicodeDecodeError, message: str) -> Problem:
    """``message`` at the line and column of the first byte that is not UTF-8 (it was
    always reported at the first column, of the first line for a trace)."""
    return at_byte(file, bytes(error.object), error.start, message)


def at_byte(file: str, raw: bytes, index: int, message: str) -> Problem:
    """``message`` at the line and column (in characters) of byte ``index`` of ``raw``."""
    start = raw.rfind(b"\n", 0, index) + 1
    column = len(raw[start:index].decode("utf-8", "replace")) + 1
    return Problem(file, raw.count(b"\n", 0, index) + 1, column, message)


class EvalError(Exception):
    """The root of the errors this package raises on purpose (see the module docstring)."""


class InputError(EvalError):
    """One or more problems in files or arguments a user gave us (exit code 2)."""

    def __init__(self, problems: list[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem("", 0, 0, problems)]  # about arguments, not a file
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


def each_or_every_problem(items: Iterable[T], action: Callable[[T], R]) -> list[R]:
    """``action`` of each item, or one :class:`InputError` with the problems of every item
    it raised for: a user fixes them all at once, not one per attempt."""
    done: list[R] = []
    problems: list[Problem] = []
    for item in items:
        try:
            done.append(action(item))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return done


class ParamError(InputError):
    """A harness param that names something missing (an agents file, a cassette): the
    dataset loader locates it at that param (``param`` None: at the harness)."""

    def __init__(self, param: str | None, problems: list[Problem] | str) -> None:
        self.param = param
        super().__init__(problems)


class InvalidAssertion(EvalError, ValueError):
    """An assertion built in code that is malformed (a missing field, ``between: [1]``):
    the loader reports these with their location; the API raises them."""


class CheckError(EvalError):
    """An assertion's check raised something of its own (a bug in a plugin's type): the
    message names the type and the error, the original is its ``__cause__``."""


class UnknownAssertionType(EvalError, KeyError):
    """An assertion ``type`` nobody registered: never a silent no-op."""

    def __init__(self, type_name: object, known: list[str]) -> None:
        self.type_name = type_name
        self.known = known
        self.suggestion = closest(str(type_name), known)
        hint = f" — did you mean '{self.suggestion}'?" if self.suggestion else ""
        super().__init__(
            f"unknown assertion type {shorten(repr(type_name))}{hint} (known types: {', '.join(known)})"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class IncompatibleResults(EvalError, ValueError):
    """The two results cannot be gated (interrupted, empty, duplicate ids, different kinds, …)."""


MAX_SUGGEST_LENGTH = 100  # longer unknown names get no "did you mean" (edit distance is O(n·m))
"""Listed with the other limits in :mod:`signal_eval_cli.limits`; defined here, beside
the suggestions it bounds, so that errors import nothing."""


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters for a message (a 400 KB name is not echoed)."""
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"


def malformed(exc: BaseException) -> str:
    """What reading a well-formed file of the wrong shape ran into, in a message's words:
    a missing field by its name (``KeyError: 'case'`` reads as code, not as a file's fault)."""
    if type(exc) is KeyError and len(exc.args) == 1:
        return f"no field {shorten(repr(exc.args[0]))}"
    return f"{type(exc).__name__}: {exc}"


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, case-insensitive (a typo in case is one edit).

    A string longer than MAX_SUGGEST_LENGTH is never a typo: its distance is taken as
    the longer length (an upper bound) instead of costing len(a) × len(b) steps."""
    if max(len(a), len(b)) > MAX_SUGGEST_LENGTH:
        return max(len(a), len(b))
    a, b = a.lower(), b.lower()
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest(word: str, candidates: list[str]) -> str | None:
    """The candidate nearest to ``word`` when it is plausibly a typo of it; None for a
    word far longer than any candidate (edit distance costs len(word) × len(candidate))."""
    if len(word) > MAX_SUGGEST_LENGTH:
        return None
    scored = sorted((edit_distance(word, c), c) for c in candidates)
    if not scored:
        return None
    distance, best = scored[0]
    suffix_hit = [c for c in candidates if c.split(".")[-1].lower() == word.split(".")[-1].lower()]
    if distance <= max(2, len(word) // 3):
        return best
    return suffix_hit[0] if len(suffix_hit) == 1 else None
