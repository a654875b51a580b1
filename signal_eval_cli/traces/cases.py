"""A trace becomes a regression test: a case whose drafted assertions state what it did.

:func:`draft_case` reads the facts of a trace (its input, the trajectory of agents,
handoffs and tools, each tool's arguments and status, the final answer) and writes them
as assertions that pass on that trace and fail when any of those facts changes.
:func:`import_cases` imports trace files and appends their cases to a dataset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from signal_eval_cli.dataset import EvalCase
from signal_eval_cli.dataset_append import append_cases
from signal_eval_cli.files import LONE_SURROGATE, without_lone_surrogates
from signal_eval_cli.patterns import is_matcher
from signal_eval_cli.signals import Trace
from signal_eval_cli.traces import import_trace
from signal_eval_cli.traces.mapping import as_mapping

__all__ = ["draft_case", "import_cases"]

_TRAJECTORY = {  # the signals a trajectory names, and the payload keys that tell them apart
    "agent:activated": ("agent",),
    "agent:handoff": ("from", "to"),
    "tool:call": ("name",),
}


def draft_case(trace: Trace, id: str) -> EvalCase:
    """A case with the trace's input and assertions that hold on exactly what it did."""
    assertions: list[dict[str, Any]] = []
    steps = [_step(s.name, s.payload) for s in trace if s.name in _TRAJECTORY]
    if steps:
        assertions.append({"type": "signal.trajectory", "mode": "strict", "patterns": steps})
    if trace.count("tool:call") == 0:
        assertions.append({"type": "signal.not", "pattern": "tool:call"})
    for check in _tool_checks(trace):
        if check not in assertions:  # the same call twice is one fact
            assertions.append(check)
    for names in _parallel_turns(trace):
        assertions.append({"type": "tool.parallel", "tools": names})
    for check in _failures(trace):
        if check not in assertions:
            assertions.append(check)
    answer = max(LONE_SURROGATE.split(trace.output), key=len)  # see _literal
    if answer:
        assertions.append({"type": "output.contains", "text": answer})
    return EvalCase(id=id, input=without_lone_surrogates(trace.input), assertions=assertions)


def _step(name: str, payload: Any) -> dict[str, Any]:
    """The step's pattern: the keys that tell it apart, those the trace knows (a handoff
    from an agent it does not name is matched by its target alone)."""
    fields = as_mapping(payload)
    known = {k: fields[k] for k in _TRAJECTORY[name] if fields.get(k) is not None}
    return {"pattern": name, "payload": _literal_object(known)}


def _tool_checks(trace: Trace) -> Iterable[dict[str, Any]]:
    """Each call's arguments (and whether it failed, once its result is known)."""
    for call in trace.tool_calls:
        if not _is_name(call.name):
            continue
        if isinstance(call.input, Mapping):
            check: dict[str, Any] = {
                "type": "tool.calledWith",
                "name": call.name,
                "args": _literal_object(call.input),
            }
            if call.status is not None:
                check["status"] = call.status
            yield check
        else:  # arguments that are not an object (text the model wrote that is not JSON)
            yield {
                "type": "signal.contains",
                "pattern": "tool:call",
                "payload": {"name": call.name, "input": call.input},
            }


_UNWRITABLE = object()


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value != "" and not LONE_SURROGATE.search(value)


def _literal(value: Any) -> Any:
    """``value`` as a pattern matching it; an object that reads as a matcher (say
    ``{"contains": "x"}``) cannot be written as a literal and is left out of its parent,
    and so is text holding half a surrogate pair (a model's stream cut inside an emoji),
    which a dataset refuses: the input gets U+FFFD in its place, the answer is checked
    by its longest part without one."""
    if isinstance(value, str):
        return _UNWRITABLE if LONE_SURROGATE.search(value) else value
    if isinstance(value, Mapping):
        return _UNWRITABLE if is_matcher(value) else _literal_object(value)
    if isinstance(value, list):
        items = [_literal(v) for v in value]
        return _UNWRITABLE if any(i is _UNWRITABLE for i in items) else items
    return value


def _literal_object(value: Mapping[str, Any]) -> dict[str, Any]:
    """An object pattern (a deep subset: a key left out still matches)."""
    out = {str(k): _literal(v) for k, v in value.items()}
    return {k: v for k, v in out.items() if v is not _UNWRITABLE}


_FAILURES = {"agent:error": ("agent", "error"), "provider:error": ("model", "error")}


def _failures(trace: Trace) -> Iterable[dict[str, Any]]:
    """Each failure the run had (an agent that failed, a model call refused): a case
    drafted from a failed run states it, so it does not pass on a run that went well."""
    for signal in trace:
        if signal.name in _FAILURES:
            fields = as_mapping(signal.payload)
            keys = [k for k in _FAILURES[signal.name] if fields.get(k) is not None]
            payload = _literal_object({k: fields[k] for k in keys})
            yield {"type": "signal.contains", "pattern": signal.name, "payload": payload}


def _parallel_turns(trace: Trace) -> list[list[str]]:
    """The tool names of each model turn that called several tools, in call order."""
    turns: dict[str, list[str]] = {}
    for call in trace.tool_calls:
        if call.turn is not None and _is_name(call.name):
            turns.setdefault(call.turn, []).append(call.name)
    return [names for names in turns.values() if len(names) > 1]


def import_cases(
    traces: Iterable[str | Path], into: str | Path, format: str | None = None
) -> list[EvalCase]:
    """Import each trace and append its drafted case to the dataset ``into`` (created if
    missing; the file's own text is kept as written). A case's id is its trace's file name
    without suffix (a byte of it that is not UTF-8, which a dataset cannot hold, as
    U+FFFD), made unique; every trace is read before the dataset is written."""
    paths = [Path(t) for t in traces]
    cases = [draft_case(import_trace(p, format), without_lone_surrogates(p.stem)) for p in paths]
    return append_cases(into, cases)
