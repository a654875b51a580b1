"""llm.judge — a model scores the output against criteria; never passes without one."""

from __future__ import annotations

from typing import Annotated

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import NAME, Notes
from signal_eval_cli.assertions.judging import JudgeRequest
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.signals import Trace

TRAJECTORY_LIMIT = 200


def render_trajectory(trace: Trace, limit: int = TRAJECTORY_LIMIT) -> str:
    """One line per signal (``#i name [agent]``), skipping streaming deltas, capped."""
    lines = []
    for index, signal in enumerate(trace):
        if signal.name == "text:delta":
            continue
        agent = f" [{signal.agent}]" if signal.agent else ""
        lines.append(f"#{index} {signal.name}{agent}")
        if len(lines) == limit:
            lines.append(f"… ({len(trace) - index - 1} more signals)")
            break
    return "\n".join(lines)


class JudgeOptions(Notes):
    """The criteria a judge scores the output on, and the mean score to reach."""

    criteria: Annotated[
        list[str],
        {
            "type": "array",
            "minItems": 1,
            "items": NAME,
            "description": "What the judge scores, each from 0 to 1.",
        },
    ]
    rubric: NotRequired[Annotated[str, Field(description="How the judge is to score.")]]
    minScore: Annotated[
        float, Field(minimum=0, maximum=1, description="The mean score the output must reach.")
    ]
    model: NotRequired[Annotated[str, Field(description="The judge model (default: the run's).")]]
    temperature: NotRequired[
        Annotated[
            float,
            Field(
                minimum=0, maximum=2, description="The judge's sampling temperature (default: 0)."
            ),
        ]
    ]
    includeTrajectory: NotRequired[
        Annotated[bool, Field(description="Show the judge the run's signals too.")]
    ]


@assertion("llm.judge", options=JudgeOptions, needs_judge=True)
def llm_judge(a: JudgeOptions, ctx: EvalContext) -> Outcome:
    """The judge's mean score over the criteria is at least ``minScore``."""
    min_score = float(a["minScore"])
    if ctx.judge is None:
        return Outcome(
            False,
            "no judge model configured (pass --judge-model or set SIGNAL_EVAL_JUDGE_MODEL)",
            min_score,
            errored=True,
        )
    request = JudgeRequest(
        criteria=list(a["criteria"]),
        output=ctx.trace.output,
        rubric=a.get("rubric"),
        model=a.get("model") or ctx.judge_model,
        temperature=float(a.get("temperature", 0.0)),
        trajectory=render_trajectory(ctx.trace) if a.get("includeTrajectory") else None,
        run=ctx.run,
    )
    try:
        verdict = ctx.judge.judge(request)
    except Exception as exc:  # any judge failure fails the assertion, with its reason
        return Outcome(False, f"judge failed: {type(exc).__name__}: {exc}", min_score, errored=True)
    missing = [c for c in request.criteria if c not in verdict.scores]
    if missing:
        return Outcome(
            False,
            f"judge gave no score for: {', '.join(missing)}",
            min_score,
            verdict.scores,
            errored=True,
        )
    score = verdict.score
    reasons = "; ".join(
        f"{c}: {verdict.scores[c]:.2f} ({verdict.reasons.get(c, '')})" for c in request.criteria
    )
    ok = score >= min_score
    relation = "≥" if ok else "<"
    return Outcome(
        ok, f"judge score {score:.2f} {relation} {min_score:.2f} — {reasons}", min_score, score
    )
