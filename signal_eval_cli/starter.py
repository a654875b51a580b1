"""``signal-eval init``: a starter project a new user can run at once, offline.

Two files: a custom harness (``agent.py``) that emits the signals a real agent does, and
a dataset (``evals/example.yaml``) whose cases check them with several assertion types
and pass. The harness answers from a script by default, so the first ``signal-eval run``
needs no key; given ``--provider openai:<model>`` it asks the model through the run's
proxy, which ``--record`` records for offline replay. Nothing is ever overwritten unless
asked: a half-written starter over a user's own files would be worse than none.
"""

from __future__ import annotations

import os
from pathlib import Path

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import replace_files

__all__ = ["DATASET", "STARTER", "init_project"]

_AGENT = '''\
"""A starter harness for signal-eval: a tiny weather assistant with one tool.

signal-eval calls create_harness(**params) once, then run(input, ctx) for each case of
the dataset. Each ctx.emit(name, payload) records a signal; the dataset's assertions
check those signals (their order, the tool calls, the final text). Put your own agent
in run() and keep emitting the signals it produces.
"""

import time

FORECASTS = {"paris": "18°C and sunny", "oslo": "-3°C and snowing", "lima": "22°C and cloudy"}


def get_weather(city):
    """The agent's tool: a forecast, or LookupError for a city it does not know."""
    try:
        return FORECASTS[city.lower()]
    except KeyError:
        raise LookupError(f"no forecast for {city}") from None


def create_harness(provider=None):
    """provider: "openai:<model>" when run with --provider; None answers offline."""
    if provider is not None:  # the SDK's import takes about a second: here, before any
        import openai  # noqa: F401  # case starts its clock, not in the first cases' latency

    def run(input, ctx):
        started = time.perf_counter()
        ctx.emit("harness:start", {"input": input})
        me = {"agent": "forecaster"}
        agent = ctx.emit("agent:activated", {**me, "trigger": "harness:start"}, **me)
        city = input["city"]
        call = {"id": "call-1", "name": "get_weather"}
        called = ctx.emit("tool:call", {**call, "input": {"city": city}}, **me, parent=agent)
        try:
            forecast = get_weather(city)
        except LookupError as error:  # the tool failed: its result carries the error
            ctx.emit("tool:result", {**call, "error": str(error)}, **me, parent=called)
            answer = f"Sorry, I have no forecast for {city}."
        else:
            ctx.emit("tool:result", {**call, "result": forecast}, **me, parent=called)
            answer = ask_model(ctx, provider, city, forecast)
        ctx.emit("text:complete", {"content": answer}, **me, parent=agent)
        ctx.emit("harness:end", {"durationMs": (time.perf_counter() - started) * 1000})

    return run


def ask_model(ctx, provider, city, forecast):
    """The answer to the user: scripted offline, else written by the model."""
    if provider is None:
        return f"The weather in {city}: {forecast}."
    # ctx.openai() is an OpenAI client (pip install openai) pointed at signal-eval's
    # proxy, which records the call with --record and replays it offline later.
    model = provider.partition(":")[2]
    prompt = f"In one sentence, tell the user the weather in {city}: {forecast}."
    reply = ctx.openai().chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content
'''

_DATASET = """\
# A starter dataset: signal-eval runs the harness in agent.py on each case and checks
# the signals it emits. Offline, no key needed; from any directory:
#   signal-eval validate evals/example.yaml
#   signal-eval run evals/example.yaml
#
# With a real model (agent.py then asks it to word the answer; needs `pip install openai`
# and OPENAI_API_KEY, or OPENAI_BASE_URL for any compatible server):
#   signal-eval run evals/example.yaml --provider openai:gpt-4o-mini --record   # call it, record cassettes/example.proxy.yaml
#   signal-eval run evals/example.yaml --provider openai:gpt-4o-mini            # replay the recording offline
name: Weather assistant (starter)
harness: ../agent.py:create_harness      # relative to this file, as every path in it
defaultAssertions:                       # checked in every case, before its own
  - {type: signal.not, pattern: "error:*"}
  - {type: metric.latency.max, value: 30000}     # ms, from harness:end durationMs
cases:
  - id: sunny-paris
    input: {city: Paris}
    assertions:
      - type: signal.trajectory                  # these signals, in this order
        patterns:
          - harness:start
          - {pattern: agent:activated, payload: {agent: forecaster}}
          - {pattern: tool:call, payload: {name: get_weather}}
          - tool:result
          - text:complete
          - harness:end
      - {type: tool.calledWith, name: get_weather, args: {city: Paris}}
      - {type: output.contains, text: sunny, caseSensitive: false}

  - id: snowy-oslo
    input: {city: Oslo}
    assertions:
      - {type: tool.calledWith, name: get_weather, args: {city: Oslo}, status: ok}
      - {type: output.matches, regex: "-3 ?°C"}
      - {type: metric.activations, min: 1, max: 1}

  - id: unknown-city
    input: {city: Atlantis}
    assertions:
      - {type: tool.calledWith, name: get_weather, args: {city: Atlantis}, status: error}
      - {type: output.contains, text: no forecast, caseSensitive: false}
      - {type: tool.failed, name: get_weather, count: 1}   # calls whose tool:result has an error
"""

DATASET = Path("evals", "example.yaml")
"""The starter's dataset, relative to the project directory."""

STARTER: dict[Path, str] = {Path("agent.py"): _AGENT, DATASET: _DATASET}
"""What ``init`` writes: each file's path (relative to the project) and its text."""


def init_project(directory: str | Path = ".", force: bool = False) -> list[Path]:
    """Write the starter into ``directory`` (created if missing); return the files written.

    Nothing is written when any of them exists already (``force``: they are replaced,
    each whole, a symlink itself rather than the user's file it points to), nor when
    ``directory`` or a folder on the way is a file: the ``InputError`` names it.
    """
    root = Path(directory)
    targets = [root / name for name in STARTER]
    folders = dict.fromkeys([root, *(t.parent for t in targets)])  # in order, each once
    blocked = [p for p in folders if p.exists() and not p.is_dir()]
    problems = [Problem(str(p), 0, 0, "is not a directory") for p in blocked]
    problems += [
        Problem(str(t), 0, 0, "is a directory, not a file")
        for t in targets
        if t.is_dir() and not blocked
    ]
    if not force:
        problems += [
            Problem(str(t), 0, 0, "already exists (nothing written; --force overwrites)")
            for t in targets
            if os.path.lexists(t) and not t.is_dir()  # a link, a named pipe: not written through
        ]
    if problems:
        raise InputError(problems)
    try:  # all or none; a file further up (notes.txt/proj), no permission: said, no traceback
        replace_files({t: text.encode() for t, text in zip(targets, STARTER.values(), strict=True)})
    except OSError as exc:
        where = exc.filename or root
        message = f"{exc.strerror or exc} (nothing written)"
        raise InputError([Problem(str(where), 0, 0, message)]) from exc
    return targets
