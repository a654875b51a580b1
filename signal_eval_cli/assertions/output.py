"""output.* — the run's final text (content of the last ``text:complete``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import Bounds, Notes
from signal_eval_cli.assertions.helpers import describe_bounds, short, within
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.problems import Found
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import compile_regex
from signal_eval_cli.regex_budget import RegexTimeout, search

_FENCED = re.compile(r"\A\s*```[A-Za-z0-9_-]*\n(.*?)\n```\s*\Z", re.DOTALL)


class TextOptions(Notes):
    """A text the final output contains (or not)."""

    text: Annotated[str, Field(description="The text to look for.")]
    caseSensitive: NotRequired[
        Annotated[bool, Field(description="false: compare casefolded (default: true).")]
    ]


def _has(output: str, a: TextOptions) -> bool:
    text = a["text"]
    if a.get("caseSensitive", True):
        return bool(text in output)
    return bool(text.casefold() in output.casefold())


def _where(output: str) -> str:
    return f"output ({len(output)} chars): {short(output, 200)}"


@assertion("output.contains", options=TextOptions)
def output_contains(a: TextOptions, ctx: EvalContext) -> Outcome:
    """The final output contains the text."""
    output = ctx.trace.output
    if _has(output, a):
        return Outcome(True, f"output contains {a['text']!r}", a["text"])
    return Outcome(False, f"{a['text']!r} not found in {_where(output)}", a["text"], output)


@assertion("output.notContains", options=TextOptions)
def output_not_contains(a: TextOptions, ctx: EvalContext) -> Outcome:
    """The final output does not contain the text (a leaked secret, a refusal)."""
    output = ctx.trace.output
    if not _has(output, a):
        return Outcome(True, f"output does not contain {a['text']!r}", a["text"])
    return Outcome(False, f"{a['text']!r} found in {_where(output)}", a["text"], output)


def _regex_problems(a: Mapping[str, Any]) -> Iterator[Found]:
    """A regex that does not compile (with its flags) is found at load, not mid-run."""
    if isinstance(a.get("regex"), str):
        flags = a.get("flags", "")
        try:
            compile_regex(a["regex"], flags if isinstance(flags, str) else "")
        except ValueError as exc:
            yield (("regex",), str(exc))


class RegexOptions(Notes):
    """A regex with JavaScript flags."""

    regex: Annotated[str, Field(description="A JavaScript regular expression, searched for.")]
    flags: NotRequired[
        Annotated[str, Field(pattern="^[gimsuxy]*$", description="JavaScript flags, e.g. im.")]
    ]


@assertion("output.matches", options=RegexOptions, problems=_regex_problems)
def output_matches(a: RegexOptions, ctx: EvalContext) -> Outcome:
    """The regex (JavaScript flags) finds a match in the final output, within its time budget."""
    output = ctx.trace.output
    try:
        found = search(compile_regex(a["regex"], a.get("flags", "")), output)
    except RegexTimeout as exc:
        return Outcome(False, str(exc), a["regex"], errored=True)
    if found is not None:
        return Outcome(True, f"/{a['regex']}/ matched {found!r}", a["regex"], found)
    return Outcome(
        False,
        f"/{a['regex']}/{a.get('flags', '')} did not match {_where(output)}",
        a["regex"],
        output,
    )


def _parse_json(output: str) -> Any:
    """The output as JSON; a single fenced code block around it is accepted."""
    fenced = _FENCED.match(output)
    return json.loads(fenced.group(1) if fenced else output)


def _schema_problems(a: Mapping[str, Any]) -> Iterator[Found]:
    """An invalid JSON Schema is found at load, not when the first output is checked."""
    if isinstance(a.get("schema"), Mapping):
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(a["schema"])
        except jsonschema.SchemaError as exc:
            yield (("schema",), f"invalid JSON Schema: {exc.message}")


class JsonOptions(Notes, total=False):
    """A JSON Schema the output's JSON must match."""

    schema: Annotated[
        Mapping[str, Any] | bool, Field(description="A JSON Schema the output's JSON must match.")
    ]


@assertion("output.json", options=JsonOptions, problems=_schema_problems)
def output_json(a: JsonOptions, ctx: EvalContext) -> Outcome:
    """The final output is JSON (one fenced block allowed), matching the schema if given."""
    output = ctx.trace.output
    try:
        value = _parse_json(output)
    except json.JSONDecodeError as exc:
        return Outcome(
            False,
            f"output is not JSON ({exc.msg} at line {exc.lineno} col {exc.colno}): "
            f"{short(output, 200)}",
            actual=output,
        )
    schema = a.get("schema")
    if schema is None:
        return Outcome(True, "output is JSON", actual=value)
    errors = sorted(_validator(schema).iter_errors(value), key=lambda e: list(e.path))
    if not errors:
        return Outcome(True, "output is JSON matching the schema", actual=value)
    details = "; ".join(f"at /{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:3])
    return Outcome(False, f"output JSON does not match the schema: {details}", schema, value)


class LengthOptions(Notes, Bounds):
    """Bounds on the output's length in characters."""


@assertion("output.length", options=LengthOptions)
def output_length(a: LengthOptions, ctx: EvalContext) -> Outcome:
    """The final output's length in characters is within min/max."""
    length = len(ctx.trace.output)
    low, high = a.get("min"), a.get("max")
    expected = describe_bounds(low, high)
    ok = within(length, low, high)
    return Outcome(
        ok, f"output length {length} is {'' if ok else 'not '}{expected}", expected, length
    )


def _validator(schema: Any) -> Any:
    """A JSON Schema validator (jsonschema is imported by the first output.json check)."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema)
