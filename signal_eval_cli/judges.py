"""A real LLM judge for ``llm.judge``: asks a model for a structured verdict, parses it strictly.

The judge sends the case's output (and, with ``includeTrajectory``, a compact
rendering of the trace) with the criteria and the rubric, and asks for JSON::

    {"scores": [{"criterion": 1, "score": 0.8, "reason": "..."}, ...]}

one entry per criterion, scores between 0 and 1. Anything else — prose, a
missing criterion, a score of 1.3, a string score — raises
:class:`JudgeParseError`, which fails the assertion with that message; a judge
never passes by accident.

Calls go through :func:`~signal_eval_cli.providers.registry.make_provider`, so
they are retried, limited, recorded and replayed like the harness's own calls
(a judge cassette entry is ``{case: judge-<hash>, agent: judge, call: 0}``), and
cached in memory by (model, prompt, temperature, run): each run of a repeated case
gets a verdict of its own, so repeats measure the judge's noise too.

:class:`LLMJudge` implements the synchronous :class:`~signal_eval_cli.assertions.Judge`
protocol from any thread: its calls run on an event loop of its own, in a
background thread, so one HTTP client is reused across cases.

The judge model is configured once: ``--judge-model``, the dataset's
``judge: {model}``, or ``SIGNAL_EVAL_JUDGE_MODEL`` (in that order); an
assertion's own ``model`` wins over all three. A bare model name picks the
provider by its prefix (``claude…`` → Anthropic, anything else → OpenAI).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from signal_eval_cli.assertions import JudgeRequest, JudgeVerdict
from signal_eval_cli.errors import EvalError
from signal_eval_cli.providers.base import Provider, ProviderError, ProviderRequest
from signal_eval_cli.providers.registry import make_provider

if TYPE_CHECKING:  # a judge's cassette: imported by a judge that has one (see __init__)
    from signal_eval_cli.providers.recording import RecordingProvider
    from signal_eval_cli.proxy.recorder import Mode

__all__ = [
    "JUDGE_MODEL_ENV",
    "JudgeError",
    "JudgeParseError",
    "LLMJudge",
    "judge_messages",
    "judge_spec",
    "parse_verdict",
    "resolve_judge_model",
]

JUDGE_MODEL_ENV = "SIGNAL_EVAL_JUDGE_MODEL"
_RECORDING = ("replay", "record", "record-missing")
OUTPUT_LIMIT = 20_000
"""Characters of the output sent to the judge; the rest is cut with a note."""

_T = TypeVar("_T")

SYSTEM_PROMPT = """\
You are an impartial evaluator of an AI system's output. Grade the output against \
each criterion separately, using the rubric when one is given. A score is a number \
from 0 (criterion not met at all) to 1 (fully met).

Respond with only a JSON object, no other text:
{"scores": [{"criterion": <criterion number>, "score": <number from 0 to 1>, \
"reason": "<one or two sentences>"}, ...]}
with exactly one entry for each criterion, in the order given."""


class JudgeError(EvalError):
    """The judge could not give a verdict (no model, a failed call)."""


class JudgeParseError(JudgeError):
    """The judge answered, but not with a valid verdict."""


def resolve_judge_model(
    cli: str | None = None,
    dataset: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The default judge model: the CLI flag, else the dataset field, else the env var."""
    env = os.environ if environ is None else environ
    return cli or dataset or env.get(JUDGE_MODEL_ENV) or None


def _judge_case_id(spec: str, prompt: str, temperature: float, run: int) -> str:
    identity: list[Any] = [spec, prompt, temperature]
    if run:  # run 0 keeps the key it had before repeats were judged apart
        identity.append(run)
    return "judge-" + hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def judge_spec(model: str) -> str:
    """A provider spec for a judge model: ``openai:…``/``anthropic:…`` as given, else by prefix."""
    if model.startswith(("openai:", "anthropic:")):
        return model
    return f"anthropic:{model}" if model.startswith("claude") else f"openai:{model}"


def judge_messages(request: JudgeRequest) -> list[dict[str, str]]:
    """The chat messages a judge model gets for ``request``."""
    criteria = "\n".join(f"{i}. {c}" for i, c in enumerate(request.criteria, 1))
    output = request.output
    if len(output) > OUTPUT_LIMIT:
        output = (
            output[:OUTPUT_LIMIT]
            + f"\n[… {len(request.output) - OUTPUT_LIMIT} more characters cut]"
        )
    parts = [f"Criteria:\n{criteria}"]
    if request.rubric:
        parts.append(f"Rubric:\n{request.rubric.strip()}")
    parts.append(f"Output to grade (between the markers):\n<<<OUTPUT\n{output}\nOUTPUT>>>")
    if request.trajectory is not None:
        parts.append(
            "Trajectory (the signals the run emitted, in order; #index name [agent]):\n"
            f"{request.trajectory}"
        )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)


def parse_verdict(text: str, criteria: list[str]) -> JudgeVerdict:
    """The verdict in a judge's answer, or :class:`JudgeParseError` saying what is wrong.

    Accepted: the JSON object alone, or the JSON object alone in one fenced block.
    """

    def fail(why: str) -> JudgeParseError:
        shown = text if len(text) <= 300 else text[:300] + "…"
        return JudgeParseError(
            f"judge answer is not a valid verdict: {why}; the answer was {shown!r}"
        )

    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise fail(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("scores"), list):
        raise fail('expected an object with a "scores" list')
    entries = data["scores"]
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    seen: set[int] = set()
    for position, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise fail(f"scores entry {position} is not an object")
        number = entry.get("criterion")
        if isinstance(number, bool) or not isinstance(number, int):
            raise fail(f'scores entry {position} has no integer "criterion"')
        if not 1 <= number <= len(criteria):
            raise fail(
                f"scores entry {position} names criterion {number}, but there are {len(criteria)}"
            )
        if number in seen:
            raise fail(f"criterion {number} is scored twice")
        seen.add(number)
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise fail(f'criterion {number} has no numeric "score"')
        if not 0 <= score <= 1:
            raise fail(f"criterion {number} has score {score}, outside 0..1")
        reason = entry.get("reason")
        if not isinstance(reason, str):
            raise fail(f'criterion {number} has no "reason" string')
        scores[criteria[number - 1]] = float(score)
        reasons[criteria[number - 1]] = reason.strip()
    missing = [str(i) for i in range(1, len(criteria) + 1) if i not in seen]
    if missing:
        raise fail(f"no score for criterion {', '.join(missing)}")
    return JudgeVerdict(scores, reasons)


class _LoopThread:
    """An event loop in a daemon thread; ``run(coro)`` waits for it from any other thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="llm-judge", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        loop = self._start()
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise JudgeError(f"the judge call did not finish within {timeout:g} s") from None

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


class _ByModel:
    """Routes a judge request to the provider of its model (``request.model`` is the spec)."""

    name = "judge"

    def __init__(self, make: Callable[[str], Provider]) -> None:
        self._make = make
        self._providers: dict[str, Provider] = {}

    async def complete(self, request: ProviderRequest, on_delta: Any = None) -> Any:
        spec = str(request.model)
        provider = self._providers.get(spec)
        if provider is None:
            provider = self._providers[spec] = self._make(spec)
        return await provider.complete(request, on_delta)


_PREFIXES = {"openai": "OPENAI", "anthropic": "ANTHROPIC"}


def _endpoints_now() -> dict[str, str]:
    """The base URLs and keys of the providers in the environment now (a run's proxy may
    point the environment elsewhere later; its providers are made on first use)."""
    names = [f"{p}_{what}" for p in _PREFIXES.values() for what in ("BASE_URL", "API_KEY")]
    return {name: os.environ[name] for name in names if os.environ.get(name)}


def _endpoint(env: Mapping[str, str], spec: str) -> dict[str, str]:
    """``make_provider`` options for ``spec`` from ``env`` (:func:`_endpoints_now`)."""
    prefix = _PREFIXES.get(spec.partition(":")[0])
    if prefix is None:
        return {}
    found = {"base_url": env.get(f"{prefix}_BASE_URL"), "api_key": env.get(f"{prefix}_API_KEY")}
    return {name: value for name, value in found.items() if value}


@dataclasses.dataclass(frozen=True)
class _Settings:
    """What a judge is made of besides its cassette: the same in every copy of it."""

    default_model: str | None
    options: dict[str, Any]
    endpoints: dict[str, str]
    timeout: float


class LLMJudge:
    """The :class:`~signal_eval_cli.assertions.Judge` that asks a real model.

    Args:
        default_model: used when an assertion names no ``model``.
        provider_options: passed to ``make_provider`` (``max_connections``,
            ``timeout``, ``prices``, ``api_key``, ``base_url``…).
        cassette: where judge calls are recorded / replayed from.
        mode: ``auto`` (replay when the cassette exists, else live), ``replay``,
            ``record``, ``record-missing`` or ``live``.
        timeout: seconds one ``judge`` call may take in all, retries included.

    A pickled judge (sent to a Ray actor) is a copy with the same model, options,
    endpoints, mode and cassette entries, which never writes the cassette: what it
    records is handed back to this judge's recorder
    (:func:`~signal_eval_cli.providers.recording.take_handed`), so the run saves one
    cassette, once.
    """

    def __init__(
        self,
        default_model: str | None = None,
        *,
        provider_options: Mapping[str, Any] | None = None,
        cassette: str | Path | None = None,
        mode: str = "auto",
        timeout: float = 600.0,
    ) -> None:
        path = Path(cassette) if cassette is not None else None
        if path is not None and mode == "auto":
            mode = "replay" if path.is_file() else "live"
        self._setup(
            _Settings(default_model, dict(provider_options or {}), _endpoints_now(), timeout)
        )
        if path is None or mode == "live":
            if mode not in ("auto", "live"):
                raise ValueError(f"judge mode {mode!r} needs a cassette")
            return
        if mode not in _RECORDING:
            raise ValueError(f"judge mode must be auto, live or one of {_RECORDING}, got {mode!r}")
        if mode == "replay" and not path.is_file():
            raise ValueError(f"{path}: judge cassette not found (record it with --record)")
        from signal_eval_cli.providers.cassette import CassetteFile
        from signal_eval_cli.providers.recording import RecordingProvider

        self._record(
            RecordingProvider(
                CassetteFile(path),
                None if mode == "replay" else self._live,
                mode=cast("Mode", mode),
                name="judge",
                one_call_cases=True,
            )
        )

    def _setup(self, settings: _Settings) -> None:
        self._settings = settings
        self.default_model = settings.default_model
        self.timeout = settings.timeout
        self.calls = 0
        self.cache_hits = 0
        self._options = settings.options
        self._cache: dict[tuple[str, str, float, int], JudgeVerdict] = {}
        self._lock = threading.Lock()
        self._loop = _LoopThread()
        env = settings.endpoints
        self._live = _ByModel(
            lambda spec: make_provider(spec, **{**_endpoint(env, spec), **self._options})
        )
        self.provider: Provider = self._live
        self.recording: RecordingProvider | None = None

    def _record(self, recording: RecordingProvider) -> None:
        self.recording = self.provider = recording

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self._settings, "recording": self.recording}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["settings"])
        recording: RecordingProvider | None = state["recording"]
        if recording is not None:  # a copy: never writes (hands its recordings over)
            self._record(
                recording if recording.mode == "replay" else recording.with_inner(self._live)
            )

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        model = request.model or self.default_model
        if not model:
            raise JudgeError(
                "no judge model configured (pass --judge-model, set the dataset's judge.model "
                "or SIGNAL_EVAL_JUDGE_MODEL, or give the assertion a model)"
            )
        spec = judge_spec(model)
        messages = judge_messages(request)
        prompt = json.dumps(messages, ensure_ascii=False)
        key = (spec, prompt, request.temperature, request.run)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        call = ProviderRequest(
            case_id=_judge_case_id(spec, prompt, request.temperature, request.run),
            agent="judge",
            messages=messages,
            model=spec,
            temperature=request.temperature,
        )
        self.calls += 1
        try:
            response = self._loop.run(self.provider.complete(call), self.timeout)
        except ProviderError as exc:
            if exc.code != "cassette_miss" or not request.run:
                raise
            # A cassette recorded before repeats were judged apart holds run 0 only.
            first = _judge_case_id(spec, prompt, request.temperature, 0)
            earlier = dataclasses.replace(call, case_id=first)
            response = self._loop.run(self.provider.complete(earlier), self.timeout)
        verdict = parse_verdict(response.text, request.criteria)
        with self._lock:
            self._cache[key] = verdict
        return verdict

    def save(self) -> bool:
        """Write recorded judge calls to the cassette (also done by :meth:`close`)."""
        return bool(self.recording.save()) if self.recording is not None else False

    def close(self) -> None:
        """Save recordings and stop the judge's event loop (closing its HTTP clients)."""
        self.save()
        self._loop.close()
