"""Shared helpers: build traces from compact specs and evaluate assertions on them.

A spec is one of

- ``"name"``                      → a signal with no payload;
- ``("name", payload)``           → with a payload;
- ``("name", payload, "agent")``  → also with ``source.agent``;
- a ``dict`` in the JSON shape, or a :class:`Signal`, used as is.

Signals get ids ``s0``, ``s1``, … (their position) and increasing timestamps, so
``parent`` links can be written by position: ``sig("x", parent="s3")``.

Test modules import these helpers with ``from conftest import ...``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Any

import pytest

from signal_eval_cli import AssertionResult, Signal, Trace, evaluate_assertion

Spec = str | tuple[Any, ...] | Mapping[str, Any] | Signal


def pytest_configure(config: pytest.Config) -> None:
    """The pytest runs that tests start in fixtures (scenario goals, grading) need none of
    the plugins this venv autoloads: langsmith's and hypothesis's cost about 4.5 s of CPU
    per run, most of the suite's time in scenario tests. Set for subprocesses only: a worker
    or an undistributed run has loaded its own plugins already, and the xdist controller
    must not hand it to the workers it is about to start."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not config.getoption("numprocesses", None):
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    _take_back_sigint()


def _take_back_sigint() -> None:
    """The tests that Ctrl-C a command start it as a terminal does, with SIGINT's default
    action. A suite started as a background job (``pytest ... &`` in a script) inherits
    SIGINT ignored, and an ignored signal stays ignored across exec: every command the
    tests started ignored their Ctrl-C (as it must: see interrupts.py), each such test
    waited 120 s and failed, and the scenario runs it then killed left their overlay
    workspaces mounted. A background job gets no Ctrl-C from its terminal anyway."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (the Ray cluster's, over a minute on busy cores) run first.
    pytest-xdist deals tests out in collection order, so a long test collected late ends
    the suite alone while the other workers idle; started first, it runs while they share
    out the rest."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def sig(
    name: str,
    payload: Any = None,
    agent: str | None = None,
    *,
    id: str | None = None,
    parent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One signal in the JSON shape (ids are filled in by :func:`trace` when omitted)."""
    data: dict[str, Any] = {"name": name, "payload": payload}
    if id is not None:
        data["id"] = id
    source = {k: v for k, v in (("agent", agent), ("parent", parent)) if v is not None}
    if source:
        data["source"] = source
    data.update(extra)
    return data


TURNS = [  # two calls in one response (p1), one in the next (p2, it fails), one without a turn
    sig("provider:start", {}, id="p1"),
    sig("tool:call", {"id": "a", "name": "search", "input": {"q": "x"}}, parent="p1"),
    sig("tool:call", {"id": "b", "name": "fetch", "input": {"url": "u"}}, parent="p1"),
    ("tool:result", {"id": "a", "name": "search", "result": "r"}),
    ("tool:result", {"id": "b", "name": "fetch", "result": "page"}),
    sig("provider:start", {}, id="p2"),
    sig("tool:call", {"id": "c", "name": "fetch", "input": {"url": "v"}}, parent="p2"),
    ("tool:result", {"id": "c", "name": "fetch", "result": "", "error": "404"}),
    ("tool:call", {"id": "d", "name": "search", "input": {"q": "y"}}),
    ("agent:handoff", {"from": "triage", "to": "billing"}),
    ("agent:handoff", {"from": "billing", "to": "triage"}),
]


def _to_dict(spec: Spec) -> dict[str, Any]:
    if isinstance(spec, Signal):
        return spec.to_dict()
    if isinstance(spec, str):
        return sig(spec)
    if isinstance(spec, tuple):
        return sig(*spec)
    if isinstance(spec, Mapping):
        return dict(spec)
    raise TypeError(f"not a signal spec: {spec!r}")


def signals(*specs: Spec) -> list[dict[str, Any]]:
    """The JSON dicts of ``specs``, with ``id`` = ``s<position>`` and timestamps filled in."""
    out = []
    for position, spec in enumerate(specs):
        data = _to_dict(spec)
        data.setdefault("id", f"s{position}")
        data.setdefault("timestamp", f"2026-01-10T00:00:{position % 60:02d}.000Z")
        out.append(data)
    return out


def trace(*specs: Spec, input: Any = None) -> Trace:
    """A :class:`Trace` of ``specs`` (see the module docstring)."""
    return Trace.from_signals(signals(*specs), input=input)


def check(assertion: Mapping[str, Any], t: Trace, **context: Any) -> AssertionResult:
    """Evaluate through the public API."""
    return evaluate_assertion(dict(assertion), t, **context)


def passes(assertion: Mapping[str, Any], t: Trace, **context: Any) -> AssertionResult:
    """Evaluate and require a pass; the failure message shows why it did not."""
    result = check(assertion, t, **context)
    assert result.passed, f"expected {assertion} to pass, got: {result.message}"
    assert isinstance(result.message, str) and result.message
    assert result.evaluation_ms >= 0
    return result


def fails(assertion: Mapping[str, Any], t: Trace, **context: Any) -> AssertionResult:
    """Evaluate and require a failure with a non-empty explanation."""
    result = check(assertion, t, **context)
    assert not result.passed, f"expected {assertion} to fail, but it passed: {result.message}"
    assert isinstance(result.message, str) and result.message
    return result


def review_trace(input: Any = None) -> Trace:
    """A small realistic run: a reviewer reads, analyses, edits; a fixer follows."""
    return trace(
        ("harness:start", {"input": {"file": "app.py"}, "runId": "r1"}),
        ("agent:activated", {"agent": "reviewer", "trigger": "harness:start"}, "reviewer"),
        ("provider:start", {}, "reviewer"),
        ("text:delta", {"content": "Found a "}, "reviewer"),
        ("text:delta", {"content": "SQL injection"}, "reviewer"),
        ("tool:call", {"id": "t1", "name": "Read", "input": {"path": "app.py"}}, "reviewer"),
        ("tool:result", {"id": "t1", "name": "Read", "result": "print(1)"}, "reviewer"),
        (
            "state:analysis:changed",
            {"key": "analysis", "oldValue": None, "newValue": {"confidence": 0.9}},
            "reviewer",
        ),
        ("analysis:complete", {"confidence": 0.9, "issues": ["sqli", "xss"]}, "reviewer"),
        (
            "provider:end",
            {"usage": {"inputTokens": 100, "outputTokens": 40}, "cost": 0.01},
            "reviewer",
        ),
        ("review:complete", {"passed": False, "severity": "high"}, "reviewer"),
        ("agent:activated", {"agent": "fixer", "trigger": "review:complete"}, "fixer"),
        (
            "tool:call",
            {"id": "t2", "name": "Edit", "input": {"path": "app.py", "line": 3}},
            "fixer",
        ),
        ("tool:result", {"id": "t2", "name": "Edit", "result": "ok"}, "fixer"),
        ("tool:call", {"id": "t3", "name": "Bash", "input": {"cmd": "pytest -q"}}, "fixer"),
        (
            "provider:end",
            {"usage": {"inputTokens": 50, "outputTokens": 10}, "cost": 0.005},
            "fixer",
        ),
        ("text:complete", {"content": "Found a SQL injection; fixed it."}, "fixer"),
        ("harness:end", {"durationMs": 1234, "output": "done"}),
        input=input,
    )


@pytest.fixture
def review() -> Trace:
    return review_trace()
