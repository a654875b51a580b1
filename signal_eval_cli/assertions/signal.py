"""signal.* — presence, absence, counts, order, first and last of named signals."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, NamedTuple, TypedDict, get_args

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import PATTERN, Counted, Notes, Pattern, Payload
from signal_eval_cli.assertions.helpers import PREVIEW_ITEMS, count_outcome, short
from signal_eval_cli.assertions.options import Field, NotRequired, field_schema
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.problems import Found, glob_message, located_matchers
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import match_pattern, pattern_problems
from signal_eval_cli.signals import Signal, Trace

TRAJECTORY_PREVIEW = 50


class NamedOptions(Notes):
    """A signal named by a glob, with an optional partial-match payload."""

    pattern: Annotated[Pattern, Field(description="Which signals: a name glob.")]
    payload: NotRequired[
        Annotated[Payload, Field(description="Only signals whose payload matches this.")]
    ]


def _carries(signal: Signal, payload: Any) -> bool:
    return payload is None or match_pattern(payload, signal.payload)


def _find(trace: Trace, pattern: str, payload: Any, start: int = 0) -> int | None:
    """Position of the first signal from ``start`` matching name and payload."""
    if payload is None:
        return trace.find(pattern, start)
    signals = trace.signals
    return next((i for i in trace.positions(pattern, start) if _carries(signals[i], payload)), None)


def _names(trace: Trace, pattern: str) -> list[str]:
    return [s.name for s in itertools.islice(trace.matching(pattern), PREVIEW_ITEMS)]


@assertion("signal.contains", options=NamedOptions)
def signal_contains(a: NamedOptions, ctx: EvalContext) -> Outcome:
    """Some signal matches the pattern (and carries the payload)."""
    pattern, payload = a["pattern"], a.get("payload")
    found = _find(ctx.trace, pattern, payload)
    if found is not None:
        return Outcome(True, f"found '{ctx.trace[found].name}' at #{found}", actual=found)
    count = ctx.trace.count(pattern)
    if count == 0:
        return Outcome(False, f"no signal matches '{pattern}'", expected=pattern)
    first = next(ctx.trace.matching(pattern))
    return Outcome(
        False,
        f"{count} signal(s) match '{pattern}' but none carries payload {short(payload)}; "
        f"first payload: {short(first.payload)}",
        expected=payload,
        actual=first.payload,
    )


@assertion("signal.not", options=NamedOptions)
def signal_not(a: NamedOptions, ctx: EvalContext) -> Outcome:
    """No signal matches the pattern (with the payload): what must never happen."""
    pattern, payload = a["pattern"], a.get("payload")
    found = _find(ctx.trace, pattern, payload)
    if found is None:
        carrying = f" with payload {short(payload)}" if payload is not None else ""
        return Outcome(True, f"no signal matches '{pattern}'{carrying}")
    signal = ctx.trace[found]
    return Outcome(
        False,
        f"'{signal.name}' at #{found} matches '{pattern}' "
        f"({ctx.trace.count(pattern)} in all; first matches: {', '.join(_names(ctx.trace, pattern))})",
        expected=0,
        actual=ctx.trace.count(pattern),
    )


class CountOptions(NamedOptions, Counted):
    """How many signals match, within bounds."""


@assertion("signal.count", options=CountOptions)
def signal_count(a: CountOptions, ctx: EvalContext) -> Outcome:
    """How many signals match (with the payload): within min/max, or exactly."""
    pattern, payload = a["pattern"], a.get("payload")
    trace = ctx.trace
    if payload is None:
        actual = trace.count(pattern)
        examples = _names(trace, pattern)
    else:
        hits = [s for s in trace.matching(pattern) if _carries(s, payload)]
        actual, examples = len(hits), [s.name for s in hits[:PREVIEW_ITEMS]]
    return count_outcome(f"'{pattern}' signals", actual, a, examples, at_least_once=False)


def _step(step: Any) -> tuple[str, Any]:
    if isinstance(step, Mapping):
        return step["pattern"], step.get("payload")
    return step, None


def _describe_step(step: Any) -> str:
    pattern, payload = _step(step)
    return pattern if payload is None else f"{pattern} {short(payload)}"


def _relevant_names(trace: Trace, steps: list[tuple[str, Any]]) -> list[str]:
    """The actual sequence of signals that match any step, for the report (capped)."""
    patterns = {pattern for pattern, _ in steps}
    positions = sorted(
        itertools.chain.from_iterable(
            itertools.islice(trace.positions(p), TRAJECTORY_PREVIEW) for p in patterns
        )
    )
    return [trace[i].name for i in positions[:TRAJECTORY_PREVIEW]]


def _greedy(trace: Trace, steps: list[tuple[str, Any]], lo: int, hi: int) -> list[int]:
    """Positions matched by an in-order greedy subsequence search (stops at a miss)."""
    matched: list[int] = []
    start = lo
    for pattern, payload in steps:
        found = _find(trace, pattern, payload, start)
        if found is None or found >= hi:
            break
        matched.append(found)
        start = found + 1
    return matched


def _contiguous(
    trace: Trace, steps: list[tuple[str, Any]], lo: int, hi: int
) -> tuple[list[int], list[int]]:
    """A run of consecutive signals matching every step: ``(run, longest partial run)``."""
    first_pattern, first_payload = steps[0]
    best: list[int] = []
    for start in trace.positions(first_pattern, lo, hi):
        if not _carries(trace[start], first_payload):
            continue
        run = [start]
        for offset, (pattern, payload) in enumerate(steps[1:], 1):
            index = start + offset
            if index >= hi or not _step_matches(trace[index], pattern, payload):
                break
            run.append(index)
        if len(run) == len(steps):
            return run, run
        if len(run) > len(best):
            best = run
    return [], best


def _step_matches(signal: Signal, pattern: str, payload: Any) -> bool:
    from signal_eval_cli.patterns import compile_glob

    return compile_glob(pattern).fullmatch(signal.name) is not None and _carries(signal, payload)


def _window(trace: Trace, a: Mapping[str, Any]) -> tuple[int, int] | Outcome:
    """``[lo, hi)``: after the first ``after`` match, before the next ``before`` match."""
    lo, hi = 0, len(trace)
    after, before = a.get("after"), a.get("before")
    if after is not None:
        found = trace.find(after)
        if found is None:
            return Outcome(False, f"window start 'after: {after}' never occurs", expected=after)
        lo = found + 1
    if before is not None:
        found = trace.find(before, lo)
        if found is None:
            where = f" after #{lo - 1}" if after is not None else ""
            return Outcome(
                False, f"window end 'before: {before}' never occurs{where}", expected=before
            )
        hi = found
    return lo, hi


Mode = Literal["strict", "unordered", "subset", "superset"]
MODES: tuple[Mode, ...] = get_args(Mode)


class Step(TypedDict):
    """A trajectory step written as a mapping: a glob and a payload."""

    pattern: Pattern
    payload: NotRequired[Payload]


_STEP = {"if": {"type": "string"}, "then": PATTERN, "else": field_schema(Step)}
"""A step: a glob, or a mapping with one."""


class TrajectoryOptions(Notes):
    """Steps (globs, or globs with payloads) in order, by mode, within a window."""

    patterns: Annotated[
        list[Annotated[str | Step, _STEP]],
        Field(minItems=1, description="The steps: name globs, or {pattern, payload}."),
    ]
    strict: NotRequired[
        Annotated[bool, Field(description="No other signal may come between the steps.")]
    ]
    mode: NotRequired[
        Annotated[
            Mode,
            Field(
                description="agentevals-style match over the signals the steps name; "
                "default: in order, gaps allowed."
            ),
        ]
    ]
    after: NotRequired[
        Annotated[Pattern, Field(description="Only signals after the first match of this pattern.")]
    ]
    before: NotRequired[
        Annotated[Pattern, Field(description="Only signals before the next match of this pattern.")]
    ]


def _trajectory_problems(a: Mapping[str, Any]) -> Iterator[Found]:
    """Each step's glob and payload pattern, located at the step."""
    steps = a.get("patterns")
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(step, str):
            message = glob_message(step)
            if message is not None:
                yield (("patterns", i), message)
        elif isinstance(step, Mapping):
            pattern = step.get("pattern")
            message = glob_message(pattern) if isinstance(pattern, str) else None
            if message is not None:
                yield (("patterns", i, "pattern"), message)
            found = pattern_problems(step.get("payload"))
            if found:
                yield from located_matchers(("patterns", i, "payload"), found)


@assertion("signal.trajectory", options=TrajectoryOptions, problems=_trajectory_problems)
def signal_trajectory(a: TrajectoryOptions, ctx: EvalContext) -> Outcome:
    """The steps occur in order (gaps allowed; ``strict``: contiguous), or by ``mode``."""
    raw_steps = list(a["patterns"])
    steps = [_step(s) for s in raw_steps]
    trace = ctx.trace
    expected = [_describe_step(s) for s in raw_steps]
    window = _window(trace, a)
    if isinstance(window, Outcome):
        return window
    lo, hi = window
    if a.get("mode") in MODES:
        return _by_mode(trace, steps, expected, str(a["mode"]), lo, hi)
    strict = bool(a.get("strict", False))
    if not steps:
        return Outcome(True, "empty trajectory", expected=expected, trajectory=[])
    if strict:
        run, best = _contiguous(trace, steps, lo, hi)
        matched = run or best
    else:
        matched = _greedy(trace, steps, lo, hi)
    sequence = _relevant_names(trace, steps)
    if len(matched) == len(steps):
        kind = "contiguous run" if strict else "in order"
        return Outcome(
            True,
            f"all {len(steps)} steps matched {kind} at #{matched[0]}..#{matched[-1]}",
            expected=expected,
            actual=[trace[i].name for i in matched],
            trajectory=sequence,
        )
    missing = expected[len(matched)]
    if matched:
        last = matched[-1]
        where = f"after #{last} '{trace[last].name}'"
        if strict:
            where = f"right after #{last} '{trace[last].name}' (strict: no signal may come between)"
    else:
        where = "anywhere in the trace" if not strict else "(no start of a contiguous run)"
    if (lo, hi) != (0, len(trace)):
        where += f" within #{lo}..#{hi - 1}"
    return Outcome(
        False,
        f"matched {len(matched)} of {len(steps)} steps; step {len(matched) + 1} "
        f"'{missing}' not found {where}",
        expected=expected,
        actual=[trace[i].name for i in matched],
        trajectory=sequence,
    )


class TrajectoryPins(NamedTuple):
    """Where a ``signal.trajectory`` search went (see :func:`trajectory_pins`)."""

    matched: list[int]
    """The positions it matched (with a ``mode``: the signals its steps name)."""
    missing: str | None
    """The first step it did not find (``None``: none missing)."""
    stop: int | None
    """An in-order search that stopped: the position after which the missing step was
    looked for (the last match, or the window's ``after`` signal; -1: the start)."""


def trajectory_pins(a: Mapping[str, Any], trace: Trace) -> TrajectoryPins:
    """The check's own search, for a report to pin a failure to: payloads, ``strict``,
    ``after``/``before`` windows and modes count as they did for the verdict."""
    raw_steps = list(a["patterns"])
    steps = [_step(s) for s in raw_steps]
    window = _window(trace, a)
    if isinstance(window, Outcome) or not steps:
        return TrajectoryPins([], None, None)
    lo, hi = window
    if a.get("mode") in MODES:
        relevant = sorted({i for pattern, _ in steps for i in trace.positions(pattern, lo, hi)})
        pairs = _matching(trace, steps, relevant)
        free = [i for i in range(len(steps)) if i not in pairs]
        return TrajectoryPins(relevant, _describe_step(raw_steps[free[0]]) if free else None, None)
    if a.get("strict", False):
        run, best = _contiguous(trace, steps, lo, hi)
        matched = run or best
    else:
        matched = _greedy(trace, steps, lo, hi)
    if len(matched) == len(steps):
        return TrajectoryPins(matched, None, None)
    stop = matched[-1] if matched else lo - 1
    return TrajectoryPins(matched, _describe_step(raw_steps[len(matched)]), stop)


def _by_mode(
    trace: Trace, steps: list[tuple[str, Any]], expected: list[str], mode: str, lo: int, hi: int
) -> Outcome:
    """agentevals-style trajectory match over the signals whose names any step names.

    ``strict``: exactly those signals, in that order; ``unordered``: the same ones in any
    order; ``subset``: each actual one is an expected step (no extra); ``superset``: each
    expected step occurs (extra allowed).
    """
    relevant = sorted({i for pattern, _ in steps for i in trace.positions(pattern, lo, hi)})
    actual = [trace[i].name for i in relevant]
    shown = actual[:TRAJECTORY_PREVIEW]
    if mode == "strict":
        for index, (step, position) in enumerate(zip(steps, relevant, strict=False)):
            if not _step_matches(trace[position], *step):
                return Outcome(
                    False,
                    f"strict: step {index + 1} '{expected[index]}' does not match #{position} "
                    f"'{trace[position].name}' {short(trace[position].payload)}",
                    expected,
                    actual,
                    trajectory=shown,
                )
        if len(relevant) != len(steps):
            return Outcome(
                False,
                f"strict: {len(steps)} steps expected, {len(relevant)} matching signals occur",
                expected,
                actual,
                trajectory=shown,
            )
        return Outcome(
            True, f"strict: the {len(steps)} steps match exactly", expected, actual, shown
        )
    pairs = _matching(trace, steps, relevant)
    free_steps = [expected[i] for i in range(len(steps)) if i not in pairs]
    used = set(pairs.values())
    extra = [f"#{p} {trace[p].name}" for p in relevant if p not in used]
    problems = []
    if mode in ("unordered", "superset") and free_steps:
        problems.append(f"steps not found: {', '.join(free_steps[:PREVIEW_ITEMS])}")
    if mode in ("unordered", "subset") and extra:
        problems.append(f"signals no step expects: {', '.join(extra[:PREVIEW_ITEMS])}")
    if problems:
        return Outcome(False, f"{mode}: " + "; ".join(problems), expected, actual, trajectory=shown)
    return Outcome(
        True, f"{mode}: {len(pairs)} of {len(steps)} steps matched", expected, actual, shown
    )


def _matching(trace: Trace, steps: list[tuple[str, Any]], relevant: list[int]) -> dict[int, int]:
    """A maximum matching step → signal position (Kuhn's augmenting paths)."""
    fits = [[p for p in relevant if _step_matches(trace[p], *step)] for step in steps]
    owner: dict[int, int] = {}  # position -> step

    def place(step: int, seen: set[int]) -> bool:
        for position in fits[step]:
            if position in seen:
                continue
            seen.add(position)
            if position not in owner or place(owner[position], seen):
                owner[position] = step
                return True
        return False

    for step in range(len(steps)):
        place(step, set())
    return {step: position for position, step in owner.items()}


def _edge(a: NamedOptions, ctx: EvalContext, *, last: bool) -> Outcome:
    pattern, payload = a["pattern"], a.get("payload")
    trace = ctx.trace
    index = trace.rfind(pattern) if last else trace.find(pattern)
    which = "last" if last else "first"
    if index is None:
        return Outcome(False, f"no signal matches '{pattern}'", expected=payload)
    signal = trace[index]
    if _carries(signal, payload):
        return Outcome(
            True, f"{which} '{pattern}' is #{index} '{signal.name}'", actual=signal.payload
        )
    return Outcome(
        False,
        f"{which} '{pattern}' (#{index} '{signal.name}') has payload {short(signal.payload)}, "
        f"expected {short(payload)}",
        expected=payload,
        actual=signal.payload,
    )


@assertion("signal.first", options=NamedOptions)
def signal_first(a: NamedOptions, ctx: EvalContext) -> Outcome:
    """The first signal matching the pattern carries the payload."""
    return _edge(a, ctx, last=False)


@assertion("signal.last", options=NamedOptions)
def signal_last(a: NamedOptions, ctx: EvalContext) -> Outcome:
    """The last signal matching the pattern carries the payload (e.g. the final verdict)."""
    return _edge(a, ctx, last=True)
