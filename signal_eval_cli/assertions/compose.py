"""all / any / not — compose assertions without code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.evaluate import evaluate_assertion
from signal_eval_cli.assertions.fields import Notes
from signal_eval_cli.assertions.options import Field
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion

Child = Annotated[Mapping[str, Any], {"$ref": "#/$defs/assertion"}]
"""An assertion of any type."""


class ListOptions(Notes):
    """Child assertions."""

    assertions: Annotated[list[Child], Field(description="The child assertions.")]


class NotOptions(Notes):
    """One child assertion."""

    assertion: Annotated[Child, Field(description="The child assertion.")]


@assertion("all", options=ListOptions)
def all_of(a: ListOptions, ctx: EvalContext) -> Outcome:
    """Every child assertion passes (a failure names the ones that did not)."""
    children = [evaluate_assertion(child, ctx) for child in a["assertions"]]
    failed = [c for c in children if not c.passed]
    if not failed:
        return Outcome(True, f"all {len(children)} passed", children=children)
    details = "; ".join(f"{c.assertion.get('type')}: {c.message}" for c in failed)
    return Outcome(
        False,
        f"{len(failed)} of {len(children)} failed — {details}",
        children=children,
        errored=any(c.errored for c in failed),
    )


@assertion("any", options=ListOptions)
def any_of(a: ListOptions, ctx: EvalContext) -> Outcome:
    """At least one child assertion passes."""
    children = [evaluate_assertion(child, ctx) for child in a["assertions"]]
    passed = [c for c in children if c.passed]
    if passed:
        return Outcome(
            True,
            f"{passed[0].assertion.get('type')} passed: {passed[0].message}",
            children=children,
        )
    details = "; ".join(f"{c.assertion.get('type')}: {c.message}" for c in children)
    return Outcome(
        False,
        f"none of {len(children)} passed — {details}",
        children=children,
        errored=any(c.errored for c in children),
    )


@assertion("not", options=NotOptions)
def not_(a: NotOptions, ctx: EvalContext) -> Outcome:
    """The child assertion fails; one that could not be evaluated is no pass."""
    child = evaluate_assertion(a["assertion"], ctx)
    if child.errored:  # "could not evaluate" is not "false": negating it must not pass
        return Outcome(
            False,
            f"cannot negate {child.assertion.get('type')}: it could not be evaluated: "
            f"{child.message}",
            children=[child],
            errored=True,
        )
    verdict = "failed, as required" if not child.passed else "passed, but must not"
    return Outcome(
        not child.passed,
        f"{child.assertion.get('type')} {verdict}: {child.message}",
        children=[child],
    )
