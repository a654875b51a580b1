"""Signals and traces: the one input every assertion reads.

A :class:`Trace` is the ordered list of signals of one run. Every derived view
(state at any point, output, tool calls, metrics) is computed from it, lazily and
at most once, so assertions never rescan a million signals.

The name index is a string with one character per signal (each distinct name gets
its own code point). ``str.find``, ``str.count`` and compiled character classes
then answer "where is the next signal matching this glob" at C speed.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import json
import math
import operator
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any

from signal_eval_cli.jsjson import js_stringify
from signal_eval_cli.patterns import compile_glob, equal_indices, set_path, where_equal

if TYPE_CHECKING:
    from signal_eval_cli.errors import Problem
    from signal_eval_cli.pricing import PriceTable

__all__ = [
    "Signal",
    "ToolCall",
    "Trace",
    "TraceMetrics",
    "elapsed_ms",
    "read_jsonl",
    "signals_from_text",
    "write_jsonl",
]

_ids = itertools.count(1)
_PROCESS = uuid.uuid4().hex[:8]  # one random draw per process, not one per signal


def new_signal_id() -> str:
    """Short, unique within a process (and across processes), sortable by creation order."""
    return f"sig_{next(_ids):x}_{_PROCESS}"


_second: tuple[int, str] = (-1, "")
"""The last second :func:`now_iso` stamped, and its text up to the seconds."""
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))
"""A stamp's tail for each millisecond (formatting it per stamp cost half of the stamp)."""


def now_iso() -> str:
    """UTC now to the millisecond, ``2026-11-27T14:03:17.123Z`` (as ``datetime``'s
    ``isoformat`` writes it). The text of the second is made once per second: every
    signal and case is stamped, and ``datetime`` took a few microseconds each time."""
    global _second
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)
    if seconds != _second[0]:
        _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return _second[1] + _MILLIS[ns // 1_000_000]


def elapsed_ms(start: str, end: str) -> float:
    """Milliseconds from one :func:`now_iso` stamp to another (0 when either is unreadable)."""
    try:
        delta = _dt.datetime.fromisoformat(end.replace("Z", "+00:00")) - _dt.datetime.fromisoformat(
            start.replace("Z", "+00:00")
        )
    except ValueError:
        return 0.0
    return max(0.0, delta.total_seconds() * 1000)


@dataclass(slots=True)
class Signal:
    """One event of a run: ``{id, name, payload, timestamp, source: {agent, parent}}``.

    ``agent`` and ``parent`` are stored flat (not as a ``source`` dict) so the trace
    can index them at C speed; :attr:`source` rebuilds the nested view.
    """

    name: str
    payload: Any = None
    id: str = ""
    timestamp: str | float | None = None
    agent: Any = None
    """``source.agent`` as written: never coerced, so the number 5 is not the name "5"."""
    parent: str | None = None
    extra: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def source(self) -> dict[str, Any]:
        source: dict[str, Any] = {}
        if self.agent is not None:
            source["agent"] = self.agent
        if self.parent is not None:
            source["parent"] = self.parent
        if self.extra and isinstance(self.extra.get("source"), dict):
            source.update(self.extra["source"])
        return source

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Signal:
        """Build from the JSON shape; unknown keys are kept in ``extra`` and written back.

        Runs for every signal of every case a run or a load builds: the usual shape (no
        unknown key, a string id) takes no detour."""
        if type(data) is not dict and not isinstance(data, Mapping):
            raise TypeError(f"a signal must be an object, got {type(data).__name__}")
        get = data.get
        name = get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a signal needs a non-empty string 'name'")
        source = get("source") or _NO_SOURCE
        if type(source) is not dict and not isinstance(source, Mapping):
            raise ValueError("'source' must be an object")
        extra = None
        if not data.keys() <= _SIGNAL_KEYS:
            extra = {k: v for k, v in data.items() if k not in _SIGNAL_KEYS}
        if not source.keys() <= _SOURCE_KEYS:
            extra = extra or {}
            extra["source"] = {k: v for k, v in source.items() if k not in _SOURCE_KEYS}
        ident = get("id")
        return cls(
            name,
            get("payload"),
            ident if type(ident) is str else str(ident or ""),
            get("timestamp"),
            source.get("agent"),
            _opt_str(source.get("parent")),
            extra,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "payload": self.payload}
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp
        source = self.source
        if source:
            out["source"] = source
        if self.extra:
            out.update({k: v for k, v in self.extra.items() if k != "source"})
        return out


_SIGNAL_KEYS = frozenset({"id", "name", "payload", "timestamp", "source"})
_SOURCE_KEYS = frozenset({"agent", "parent"})
_NO_SOURCE: Mapping[str, Any] = MappingProxyType({})


def _opt_str(value: Any) -> str | None:  # ids are names, not values: "7" and 7 are one id
    return None if value is None else str(value)


def as_signal(item: Signal | Mapping[str, Any]) -> Signal:
    return item if isinstance(item, Signal) else Signal.from_dict(item)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tool:call`` joined with its ``tool:result`` (by ``id``) when there is one."""

    id: str | None
    name: Any
    input: Any
    position: int
    result: Any = None
    has_result: bool = False
    error: Any = None  # the tool:result's ``error`` (a failed call), None when it succeeded
    turn: str | None = None  # the tool:call's ``source.parent``: the response that asked

    @property
    def status(self) -> str | None:
        """``"error"`` or ``"ok"`` once a result is known, else None."""
        if not self.has_result:
            return None
        return "error" if self.error not in (None, "", False) else "ok"


@dataclass(frozen=True, slots=True)
class TraceMetrics:
    latency_ms: float | None
    input_tokens: float
    output_tokens: float
    cost: float
    activations: int

    @property
    def total_tokens(self) -> float:
        return as_count(self.input_tokens + self.output_tokens)


class _CodeTable(dict[str, str]):
    """Gives each new signal name the next code point, on first sight."""

    def __missing__(self, name: str) -> str:
        code = chr(len(self))
        self[name] = code
        return code


_DENSE = 24
"""A name one signal in this many carries, or more, is read by :meth:`Trace.named` in one
pass over every signal (``compress`` costs a few nanoseconds a signal, a jump to one by its
position a cache miss: some hundreds)."""


@functools.lru_cache(maxsize=1024)
def _char_class(codes: str) -> re.Pattern[str]:
    """A character class of ``codes``: compiled once per set of codes, which recur from
    trace to trace (codes are given in order of first appearance), not once per trace."""
    return re.compile("[" + "".join(map(re.escape, codes)) + "]")


class Trace:
    """The signals of one run, with indexes built once and derived views cached."""

    def __init__(
        self, signals: list[Signal], input: Any = None, *, prices: PriceTable | None = None
    ) -> None:
        self.signals = signals
        self.input = input
        self.prices = prices
        """What prices a ``provider:end`` that states no cost (default: ``data/prices.yaml``)."""
        table = _CodeTable()
        # a comprehension: Python 3.11 reads a slot in it faster than attrgetter can
        self._codes = "".join([table[signal.name] for signal in signals])
        self._table: dict[str, str] = table
        self._classes: dict[str, re.Pattern[str] | None] = {}
        self._counts: dict[str, int] = {}

    @classmethod
    def from_signals(
        cls,
        signals: Iterable[Signal | Mapping[str, Any]],
        input: Any = None,
        *,
        prices: PriceTable | None = None,
    ) -> Trace:
        return cls([as_signal(s) for s in signals], input, prices=prices)

    def __len__(self) -> int:
        return len(self.signals)

    def __iter__(self) -> Iterator[Signal]:
        return iter(self.signals)

    def __getitem__(self, index: int) -> Signal:
        return self.signals[index]

    # -- name index ------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Distinct signal names, in order of first appearance."""
        return list(self._table)

    def names_matching(self, pattern: str) -> list[str]:
        if type(pattern) is str and pattern and "*" not in pattern:  # a name: no glob to run
            return [pattern] if pattern in self._table else []
        regex = compile_glob(pattern)
        return [name for name in self._table if regex.fullmatch(name)]

    def _class(self, pattern: str) -> re.Pattern[str] | None:
        """A character class of the codes whose names match ``pattern`` (None: no name does)."""
        if pattern in self._classes:
            return self._classes[pattern]
        codes = "".join([self._table[name] for name in self.names_matching(pattern)])
        cls = _char_class(codes) if codes else None
        self._classes[pattern] = cls
        return cls

    def count(self, pattern: str) -> int:
        cached = self._counts.get(pattern)
        if cached is None:
            codes = self._codes
            cached = sum([codes.count(self._table[n]) for n in self.names_matching(pattern)])
            self._counts[pattern] = cached
        return cached

    def positions(self, pattern: str, start: int = 0, end: int | None = None) -> Iterator[int]:
        """Positions of signals whose name matches ``pattern``, in ``[start, end)``."""
        cls = self._class(pattern)
        if cls is None:
            return iter(())
        stop = len(self._codes) if end is None else end
        return map(_match_start, cls.finditer(self._codes, start, stop))

    def find(self, pattern: str, start: int = 0) -> int | None:
        cls = self._class(pattern)
        found = cls.search(self._codes, start) if cls is not None else None
        return None if found is None else found.start()

    def rfind(self, pattern: str, end: int | None = None) -> int | None:
        """The last position matching ``pattern`` before ``end`` (default: anywhere)."""
        stop = len(self._codes) if end is None else end
        codes = self._codes
        names = self.names_matching(pattern)
        if len(names) == 1:  # a name (the usual question): no generator to run
            last = codes.rfind(self._table[names[0]], 0, stop)
        else:
            last = max((codes.rfind(self._table[n], 0, stop) for n in names), default=-1)
        return None if last < 0 else last

    def matching(self, pattern: str, start: int = 0) -> Iterator[Signal]:
        return map(self.signals.__getitem__, self.positions(pattern, start))

    def named(self, name: str) -> Iterator[Signal]:
        """Every signal named ``name``, in order. When many carry it (one in fifteen of the
        reference's trace end a model call), one pass over every signal that keeps those
        (``compress`` on a mask of the index) is faster than a jump to each by position:
        it reads the signals in the order they lie in memory, not a cache miss apiece."""
        code = self._table.get(name)
        if code is None:
            return iter(())
        if self.count(name) * _DENSE < len(self._codes):
            return self.matching(name)
        keep = dict.fromkeys(map(ord, self._table.values()), 0)
        keep[ord(code)] = 1
        return itertools.compress(self.signals, self._codes.translate(keep).encode("latin-1"))

    def payloads(self, pattern: str) -> list[Any]:
        """Payloads of every signal matching ``pattern``, in order (C-level pipeline)."""
        return list(map(_payload, self.matching(pattern)))

    # -- derived views -----------------------------------------------------------

    @cached_property
    def initial_state(self) -> Any:
        """The ``state`` of the first ``harness:start`` (what the harness started from,
        defaults included), else the case input, else that signal's ``input``."""
        first = self.find("harness:start")
        payload = self.signals[first].payload if first is not None else None
        if isinstance(payload, Mapping) and payload.get("state") is not None:
            return payload["state"]
        if self.input is not None:
            return self.input
        return payload.get("input") if isinstance(payload, Mapping) else None

    def by_id(self, signal_id: str) -> Signal | None:
        return self._ids.get(signal_id)

    @cached_property
    def _ids(self) -> dict[str, Signal]:
        return {s.id: s for s in self.signals if s.id}

    @cached_property
    def _state_class(self) -> re.Pattern[str] | None:
        """A character class of every ``state:<key>:changed`` (and plain ``state:changed``)."""
        codes = [self._table[n] for n in self.names_matching("state:**") if n.endswith(":changed")]
        return re.compile("[" + "".join(map(re.escape, codes)) + "]") if codes else None

    def state_after(self, index: int) -> Any:
        """State right after signal ``index``: the initial state plus every change up to it.

        A write is skipped only when a later one writes the same path; the rest apply in
        trace order, so a later write to ``a`` overrides an earlier write to ``a.b``.
        """
        latest: dict[str, Any] = {}
        if self._state_class is not None:
            for match in self._state_class.finditer(self._codes, 0, index + 1):
                for path, value in _state_writes(self.signals[match.start()]):
                    latest.pop(path, None)  # re-insert: dict order is the order of last writes
                    latest[path] = value
        state = self.initial_state
        for path, value in latest.items():
            state = set_path(state, path, value)
        return state

    @cached_property
    def final_state(self) -> Any:
        """``payload.state`` of the last ``harness:end`` that has a ``state`` key, else the
        state after every change."""
        position = self.rfind("harness:end")
        while position is not None:  # from the last one back (usually the only one)
            payload = self.signals[position].payload
            if isinstance(payload, Mapping) and "state" in payload:
                return payload["state"]
            position = self.rfind("harness:end", position)
        return self.state_after(len(self.signals) - 1)

    @cached_property
    def output(self) -> str:
        """Content of the last ``text:complete``; without one, the ``output`` of the last
        ``provider:end``, else the chunks of the last streamed call joined; ``""`` when
        none exist."""
        last = self.rfind("text:complete")
        if last is not None:
            return _text(_field(self.signals[last].payload, "content"))
        last = self.rfind("provider:end")
        if last is not None:
            output = _field(self.signals[last].payload, "output")
            if output is not None:
                return _text(output)
        return "".join(_text(_field(s.payload, "content")) for s in self._last_stream())

    def _last_stream(self) -> list[Signal]:
        """The ``text:delta`` chunks of the call that streamed last: those sharing the last
        chunk's ``source.parent``, else those after the ``provider:start`` before it."""
        deltas = list(self.matching("text:delta"))
        if not deltas:
            return []
        parent = deltas[-1].parent
        if parent is not None:
            return [d for d in deltas if d.parent == parent]
        last = self.rfind("text:delta")
        call = self.rfind("provider:start", last)
        return list(self.matching("text:delta", 0 if call is None else call))

    @cached_property
    def _activation_columns(self) -> tuple[list[Any], list[int]]:
        """``payload.agent`` of every ``agent:activated``, and its position, in order."""
        positions = list(self.positions("agent:activated"))
        agents = _dict_values(self._payloads_at(positions), "agent")
        if agents is None:
            payloads = self._payloads_at(positions)
            agents = [p.get("agent") if isinstance(p, Mapping) else None for p in payloads]
        return agents, positions

    @property
    def activations(self) -> list[tuple[Any, Signal]]:
        """``(payload.agent, signal)`` of every ``agent:activated``, in order."""
        agents, positions = self._activation_columns
        return list(zip(agents, map(self.signals.__getitem__, positions), strict=True))

    def activations_of(self, agent: Any) -> list[Signal]:
        agents, positions = self._activation_columns
        return [self.signals[positions[i]] for i in where_equal(agents, agent)]

    def activated(self, agent: Any) -> bool:
        """Whether ``agent`` was activated: the first of its activations answers."""
        return next(equal_indices(self._activation_columns[0], agent), None) is not None

    @cached_property
    def _tool_columns(self) -> tuple[list[Any], list[int]]:
        """:attr:`tool_names`, and the positions of those calls."""
        positions = list(self.positions("tool:call"))
        names = _dict_values(self._payloads_at(positions), "name")
        if names is None or None in names:  # a payload that is no dict, a name elsewhere
            signals = self.signals
            positions = [i for i in positions if isinstance(signals[i].payload, Mapping)]
            names = [_tool_name(p) for p in self._payloads_at(positions)]
        return names, positions

    @property
    def tool_call_payloads(self) -> list[Mapping[str, Any]]:
        """Payloads of every well-formed ``tool:call``, in order."""
        return list(self._payloads_at(self._tool_columns[1]))

    @property
    def tool_names(self) -> list[Any]:
        """Names of every ``tool:call``, in order (``payload.name``, or ``toolName``), as
        written: a call without a name has ``None``, never the name ``"None"``."""
        return self._tool_columns[0]

    def tool_inputs(self, name: Any) -> list[Any]:
        """Inputs (``input``, or ``args``) of the calls of tool ``name``, in order."""
        return list(self.iter_tool_inputs(name))

    def iter_tool_inputs(self, name: Any) -> Iterator[Any]:
        """:meth:`tool_inputs` one by one: a check that stops at the first match (of
        thousands of calls, on a long run) reads no more."""
        names, positions = self._tool_columns
        payloads = self._payloads_at(positions[i] for i in equal_indices(names, name))
        return map(_tool_input, payloads)

    def _payloads_at(self, positions: Iterable[int]) -> Iterator[Any]:
        """The payloads of the signals at ``positions``, one by one: a pass that reads
        each signal's objects together (they lie together in memory) is several times
        faster, on a long trace, than one pass per field."""
        return map(_payload, map(self.signals.__getitem__, positions))

    @cached_property
    def tool_calls(self) -> list[ToolCall]:
        results: dict[Any, Mapping[str, Any]] = {}
        for payload in self.payloads("tool:result"):
            if isinstance(payload, Mapping) and _joins(payload.get("id")):
                results.setdefault(payload.get("id"), payload)
        calls = []
        for position in self.positions("tool:call"):
            payload = self.signals[position].payload
            if not isinstance(payload, Mapping):
                continue
            call_id = payload.get("id")
            result = results.get(call_id, {}) if _joins(call_id) else {}
            calls.append(
                ToolCall(
                    id=call_id,
                    name=payload.get("name", payload.get("toolName")),
                    input=payload.get("input", payload.get("args")),
                    position=position,
                    result=result.get("result"),
                    has_result=_joins(call_id) and call_id in results,
                    error=result.get("error"),
                    turn=self.signals[position].parent,
                )
            )
        return calls

    @cached_property
    def latency_ms(self) -> float | None:
        """``durationMs`` of the last ``harness:end``; None when the run did not report it."""
        last_end = self.rfind("harness:end")
        if last_end is not None:
            payload = self.signals[last_end].payload
            if isinstance(payload, Mapping) and _is_number(payload.get("durationMs")):
                return as_float(payload["durationMs"])
        return None

    @property
    def timestamp_span_ms(self) -> float | None:
        """Milliseconds from the first to the last signal, when both carry a timestamp."""
        if len(self.signals) < 2:
            return None
        first, last = (_epoch_ms(s.timestamp) for s in (self.signals[0], self.signals[-1]))
        return None if first is None or last is None or last < first else last - first

    @cached_property
    def _usage(self) -> tuple[float, float, float]:
        """Input tokens, output tokens and cost summed over ``provider:end``."""
        if not self.count("provider:end"):  # a run that called no model (or traced none)
            return 0.0, 0.0, 0.0
        try:  # fast path: well-formed payloads, each read once
            sums = _usage_sums(map(_payload, self.named("provider:end")))
            if all(map(_is_number, sums)):
                return as_float(sums[0]), as_float(sums[1]), as_float(sums[2])
        except (KeyError, TypeError):
            pass
        return self._usage_of_any_shape()

    def _usage_of_any_shape(self) -> tuple[float, float, float]:
        """Token counts under OpenAI or Anthropic names too, and a ``provider:end`` without
        a ``cost`` priced from its tokens: its own model, else that of the
        ``provider:start`` it points at (``source.parent``), else of the last one, by
        :attr:`prices`."""
        prices = self.prices
        inputs = outputs = cost = 0.0
        model: Any = None
        models: dict[str, Any] = {}  # provider:start id -> its model
        for signal in self.matching("provider:*"):
            payload = signal.payload
            if not isinstance(payload, Mapping):
                continue
            if signal.name == "provider:start":
                model = models[signal.id] = payload.get("model")
            if signal.name != "provider:end":
                continue
            usage = payload.get("usage")
            usage = usage if isinstance(usage, Mapping) else {}
            tokens_in = _first_number(usage, _INPUT_TOKEN_KEYS)
            tokens_out = _first_number(usage, _OUTPUT_TOKEN_KEYS)
            inputs, outputs = inputs + tokens_in, outputs + tokens_out
            if _is_number(payload.get("cost")):
                cost += as_float(payload["cost"])
            else:
                started = models.get(signal.parent, model) if signal.parent else model
                priced = payload.get("model", started)
                if isinstance(priced, str):
                    if prices is None:
                        from signal_eval_cli.pricing import default_prices  # data: on need

                        prices = default_prices()
                    cost += prices.cost(priced, tokens_in, tokens_out)
        return inputs, outputs, cost

    @property
    def metrics(self) -> TraceMetrics:
        inputs, outputs, cost = self._usage
        latency = self.latency_ms
        return TraceMetrics(
            latency_ms=latency if latency is not None else self.timestamp_span_ms,
            input_tokens=as_count(inputs),
            output_tokens=as_count(outputs),
            cost=cost,
            activations=self.count("agent:activated"),
        )


_match_start = operator.methodcaller("start")
_payload = operator.attrgetter("payload")


def _dict_values(payloads: Iterable[Any], key: str) -> list[Any] | None:
    """``payload.get(key)`` of every payload, at C speed: a million-signal trace has tens
    of thousands. None when some payload is no dict: the caller reads them its own way.
    (A payload is JSON's: a dict subclass's own ``get``, were it to differ, is not asked.)"""
    try:
        return list(map(dict.get, payloads, itertools.repeat(key)))
    except TypeError:
        return None


def _tool_name(payload: Mapping[str, Any]) -> Any:
    return payload.get("name", payload.get("toolName"))


def _tool_input(payload: Mapping[str, Any]) -> Any:
    return payload.get("input", payload.get("args"))


def _usage_sums(payloads: Iterable[Any]) -> tuple[Any, Any, Any]:
    """Input tokens, output tokens and cost summed, as ``sum`` adds them, over well-formed
    ``provider:end`` payloads, in one pass; TypeError (or KeyError) at any other, whose
    usage is then read field by field."""
    inputs = outputs = cost = 0
    for payload in payloads:
        usage = payload["usage"]
        tokens_in, tokens_out, spent = usage["inputTokens"], usage["outputTokens"], payload["cost"]
        if type(tokens_in) is bool or type(tokens_out) is bool or type(spent) is bool:
            raise TypeError("True is not 1 token")
        inputs, outputs, cost = inputs + tokens_in, outputs + tokens_out, cost + spent
    return inputs, outputs, cost


def _state_writes(signal: Signal) -> list[tuple[str, Any]]:
    """``(path, newValue)`` pairs a ``state:*:changed`` (or ``state:changed``) signal writes.

    The path is ``payload.path``, else ``payload.key``, else the name's middle part;
    ``state:batch:changed`` carries a list of ``{path, newValue}``.
    """
    payload = signal.payload
    key = signal.name[len("state:") : -len(":changed")]
    if not isinstance(payload, Mapping):
        return [(key, payload)] if key else []
    value = payload.get("newValue")
    if key == "batch" and isinstance(value, list):
        return [
            (str(item["path"]), item.get("newValue"))
            for item in value
            if isinstance(item, Mapping) and item.get("path")
        ]
    for field_name in ("path", "key"):
        if isinstance(payload.get(field_name), str) and payload[field_name]:
            return [(payload[field_name], value)]
    return [(key, value)] if key else []  # a bare state:changed must say what it changed


def _epoch_ms(timestamp: str | float | None) -> float | None:
    """An ISO 8601 string, or epoch seconds or milliseconds, as epoch milliseconds."""
    if isinstance(timestamp, bool) or timestamp is None:
        return None
    if isinstance(timestamp, (int, float)):
        ms = as_float(timestamp) if timestamp > 1e11 else as_float(timestamp) * 1000
        return ms if math.isfinite(ms) else None  # 1e400 s names no moment
    try:
        parsed = _dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed.timestamp() * 1000


_INPUT_TOKEN_KEYS = ("inputTokens", "input_tokens", "promptTokens", "prompt_tokens")
_OUTPUT_TOKEN_KEYS = ("outputTokens", "output_tokens", "completionTokens", "completion_tokens")


def _first_number(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> float:
    """The first of ``keys`` that holds a number (``True`` is not one), else 0."""
    return next((as_float(mapping[k]) for k in keys if _is_number(mapping.get(k))), 0.0)


def _field(payload: Any, key: str) -> Any:
    """``payload[key]``, or a bare (non-object) payload itself."""
    return payload.get(key) if isinstance(payload, Mapping) else payload


def _text(value: Any) -> str:
    """Content as text: a string as is, ``{text: "T"}`` as ``"T"``, anything else as
    ``JSON.stringify`` writes it; ``None`` is ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])  # an SDK-style {text, ...} message
    try:
        return js_stringify(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to write>"


def as_float(number: float) -> float:
    """A JSON number as a float: an integer past a float's range (the loader takes 4,300
    digits) is infinite, as a sum of large floats becomes, not an OverflowError."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def as_count(value: Any) -> float:
    """A token count as given: ``2`` (or ``2.0``) is the int ``2``, ``2.5`` stays ``2.5``."""
    number = as_float(value)
    return int(number) if number.is_integer() else number


def _joins(call_id: Any) -> bool:
    """Whether a tool call's id can join it to its result: not None, and not an object
    or a list (a trace's garbage; JavaScript's Map would hold such a key by identity,
    so it equals no other)."""
    return call_id is not None and not isinstance(call_id, (list, dict, set))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- JSONL -------------------------------------------------------------------------


def json_lines(
    text: str, path: str, problems: list[Problem], invalid: str = "not JSON"
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of ``text`` that is JSON.

    A line that is not is appended to ``problems`` as ``path:line:col: <invalid>: why``
    and skipped; the caller raises them (in line order, with its own).
    """
    from signal_eval_cli.errors import Problem
    from signal_eval_cli.limits import JsonProblem, loads_json

    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            data = loads_json(line)
        except JsonProblem as exc:
            problems.append(Problem(path, lineno, exc.column, f"{invalid}: {exc.message}"))
            continue
        yield lineno, data


def read_jsonl(source: str | Path | IO[str]) -> list[Signal]:
    """Read one signal per line; blank lines are ignored.

    Raises :class:`signal_eval_cli.errors.InputError` with ``file:line:col`` for a
    line that is not JSON or not a signal.
    """
    from signal_eval_cli.errors import InputError, Problem
    from signal_eval_cli.files import read_input_text

    if isinstance(source, (str, Path)):
        path = str(source)
        try:
            text = read_input_text(source, "utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError([Problem(path, 1, 1, f"not UTF-8 text ({exc.reason})")]) from None
        except OSError as exc:
            raise InputError([Problem(path, 0, 0, f"cannot read: {exc.strerror}")]) from None
    else:
        path = getattr(source, "name", "<trace>")
        text = source.read()
    return signals_from_text(text, path)


def signals_from_text(text: str, path: str) -> list[Signal]:
    """The signals of JSONL ``text`` read from ``path`` (named in its problems): a file
    already read is never opened again (a pipe's second read is empty, a named pipe's
    waits for a writer that has gone)."""
    from signal_eval_cli.errors import InputError, Problem

    signals: list[Signal] = []
    problems: list[Problem] = []
    for lineno, data in json_lines(text, path, problems):
        try:
            signals.append(Signal.from_dict(data))
        except (TypeError, ValueError) as exc:
            problems.append(Problem(path, lineno, 1, f"not a signal: {exc}"))
    if problems:
        raise InputError(problems)
    return signals


def write_jsonl(signals: Iterable[Signal], target: str | Path | IO[str]) -> None:
    lines = (json.dumps(s.to_dict(), ensure_ascii=False, default=str) + "\n" for s in signals)
    if isinstance(target, (str, Path)):
        from signal_eval_cli.files import atomic_write_text

        atomic_write_text(target, "".join(lines))
    else:
        target.writelines(lines)


def reads_back_as_itself(signal: Signal) -> bool:
    """Whether ``Signal.from_dict(signal.to_dict())`` is ``signal`` again, field for field
    (the same payload object): a name, an id and a parent that are text (the forms
    :meth:`Signal.from_dict` makes), nothing in ``extra``. What a harness emits through
    its context is."""
    parent = signal.parent
    return (
        type(signal.name) is str
        and bool(signal.name)
        and type(signal.id) is str
        and (parent is None or type(parent) is str)
        and signal.extra is None
    )
