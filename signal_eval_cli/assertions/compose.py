"""all / any / not — compose assertions without code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.evaluate import evaluate_assertion
from signal_eval_cli.assertions.fields import NOTES
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion

_ASSERTION = {"$ref": "#/$defs/assertion"}
_LIST = {
    "required": ["assertions"],
    "properties": {**NOTES, "assertions": {"type": "array", "items": _ASSERTION}},
}


@assertion("all", schema=_LIST)
def all_of(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
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


@assertion("any", schema=_LIST)
def any_of(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
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


@assertion(
    "not", schema={"required": ["assertion"], "properties": {**NOTES, "assertion": _ASSERTION}}
)
def not_(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
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
