"""file-exists, file-contains, diff-match — the files a scenario leaves behind.

These read the scenario's working directory (``scope: fixture``, the default) or the
``--root`` directory (``scope: repo``) from the :class:`EvalContext`; outside a
scenario there is no directory and they fail saying so. A diff-match compares the
baseline snapshot taken before the agentTask with the final file; it always yields a
pass or a fail with a reason, never a skip.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.helpers import short
from signal_eval_cli.assertions.options import Field, NotRequired, Options
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.workpaths import PathEscapeError, read_text, resolve_inside


def _locate(a: Mapping[str, Any], ctx: EvalContext) -> tuple[Path, str] | Outcome:
    """The file's real path and a label, or a failed outcome explaining why there is none."""
    scope = a.get("scope", "fixture")
    base = ctx.workspace if scope == "fixture" else ctx.root
    label = f"{a['path']}" if scope == "fixture" else f"{a['path']} (repo)"
    if base is None:
        where = "a scenario workspace" if scope == "fixture" else "a --root directory"
        return Outcome(
            False, f"{a['type']} needs {where}: it only runs inside a scenario", errored=True
        )
    try:
        return resolve_inside(base, a["path"]), label
    except PathEscapeError as exc:
        return Outcome(False, str(exc))


F = TypeVar("F", bound="FileOptions")


def _file_assertion(
    type_name: str, options: type[F]
) -> Callable[
    [Callable[[F, EvalContext, Path, str], Outcome]], Callable[[F, EvalContext], Outcome]
]:
    """Register ``check(a, ctx, path, label)`` for the file :func:`_locate` finds, as a
    scenario's pattern assertion with these fields.

    Where it finds none, the assertion fails with the reason and ``check`` is not run;
    where it cannot read the file, it fails with the reason too.
    """

    def register(
        check: Callable[[F, EvalContext, Path, str], Outcome],
    ) -> Callable[[F, EvalContext], Outcome]:
        @functools.wraps(check)
        def located_check(a: F, ctx: EvalContext) -> Outcome:
            located = _locate(a, ctx)
            if isinstance(located, Outcome):
                return located
            try:
                return check(a, ctx, *located)
            except OSError as exc:  # a named pipe where the file should be, no permission
                return Outcome(False, f"cannot read {located[1]}: {exc.strerror or exc}")

        return assertion(type_name, options=options, workspace=True)(located_check)

    return register


# References into scenario.schema.json, where the pattern assertions' schemas sit.
RelativePath = Annotated[str, {"$ref": "#/$defs/relativePath"}]
Scope = Annotated[Literal["fixture", "repo"], {"$ref": "#/$defs/scope"}]


class FileOptions(Options):
    """A file of the scenario's workspace (or of the repository: ``scope: repo``)."""

    path: RelativePath


Note = Annotated[str, Field(description="A remark for readers; not checked.")]


class ExistsOptions(FileOptions, total=False):
    scope: Scope
    note: Note


class ContainsOptions(FileOptions):
    """Text the file must contain."""

    includes: Annotated[
        str | list[str],
        {
            "description": "Text the file must contain; with a list, every item.",
            "type": ["string", "array"],
            "minLength": 1,
            "minItems": 1,
            "items": {"type": "string", "minLength": 1},
        },
    ]
    scope: NotRequired[Scope]
    note: NotRequired[Note]


class DiffOptions(FileOptions):
    """The change the file must show since the baseline snapshot."""

    expectedDiff: Annotated[
        str, Field(description="Unified diff (hunk headers may be '@@ ... @@'); see 'match'.")
    ]
    scope: NotRequired[Scope]
    match: NotRequired[
        Annotated[
            Literal["contains", "exact"],
            Field(
                default="contains",
                description="contains: each expected hunk appears in the actual diff (with "
                "less context allowed); exact: the normalised diffs are equal.",
            ),
        ]
    ]
    note: NotRequired[Note]


@_file_assertion("file-exists", ExistsOptions)
def file_exists(a: ExistsOptions, ctx: EvalContext, path: Path, label: str) -> Outcome:
    """The file exists (and is a file)."""
    if path.is_file():
        return Outcome(True, f"{label} exists")
    if path.exists():
        return Outcome(False, f"{label} exists but is not a file")
    return Outcome(False, f"file missing: {label}")


@_file_assertion("file-contains", ContainsOptions)
def file_contains(a: ContainsOptions, ctx: EvalContext, path: Path, label: str) -> Outcome:
    """The file contains the text (each of a list of texts)."""
    wanted = [a["includes"]] if isinstance(a["includes"], str) else list(a["includes"])
    text = read_text(path)
    if text is None:
        return Outcome(False, f"file missing: {label}", wanted)
    absent = [w for w in wanted if w not in text]
    if not absent:
        return Outcome(True, f"{label} contains all {len(wanted)} expected text(s)", wanted)
    found = len(wanted) - len(absent)
    shown = ", ".join(short(w, 80) for w in absent[:5])
    return Outcome(
        False,
        f"{label}: {len(absent)} of {len(wanted)} expected text(s) not found ({found} found): "
        f"{shown}",
        wanted,
        absent,
    )


@_file_assertion("diff-match", DiffOptions)
def diff_match(a: DiffOptions, ctx: EvalContext, path: Path, label: str) -> Outcome:
    """The file's change since the baseline snapshot matches the expected unified diff."""
    key = (a.get("scope", "fixture"), a["path"])
    if key not in ctx.baselines:
        return Outcome(
            False,
            f"no baseline snapshot of {label}: a scenario takes it before the agentTask, "
            "so diff-match cannot be judged here",
            errored=True,  # not a failure: `not` must not turn it into a pass
        )
    before, after = ctx.baselines[key], read_text(path)
    expected = a["expectedDiff"]
    if before is None and after is None:
        return Outcome(False, f"file missing: {label} exists neither before nor after the run")
    from signal_eval_cli.diffing import match_diff, normalize_diff, unified_diff  # scenarios'

    actual = unified_diff(before, after, a["path"])
    result = match_diff(actual, expected, a.get("match", "contains"), path=a["path"])
    return Outcome(result.passed, f"{label}: {result.message}", expected, normalize_diff(actual))
