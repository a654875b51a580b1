"""Proxy cassettes: the HTTP calls of a run, as readable YAML that diffs well.

One file per dataset (``cassettes/<dataset>.proxy.yaml``), or one per case in a
directory (``perCase: true``)::

    version: 1
    interactions:
      - case: refund-policy          # case id (and ``run: N`` for repeats after the first)
        call: 0                      # this case's n-th proxied call
        request: {method: POST, path: /v1/chat/completions, body: {...}}
        response: {status: 200, durationMs: 812.5, body: {...}}
        # a streamed answer keeps its events, in order, instead of ``body``:
        #   stream: [{data: {...}}, {event: message_stop, data: {...}}, {data: "[DONE]"}]

Request bodies are stored normalised (see :mod:`.matching`) and never with headers,
so no key is ever written. Files are written atomically and only for the cases that
changed, so an interrupted or failed recording leaves the rest as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_text, without_lone_surrogates
from signal_eval_cli.json_text import compact_encoder
from signal_eval_cli.loading import Document, load_document
from signal_eval_cli.proxy.apis import SSEEvent

__all__ = ["PROXY_CASSETTE_VERSION", "Interaction", "ProxyCassette", "SessionKey", "merge"]

PROXY_CASSETTE_VERSION = 1

_compact = compact_encoder()
"""A replayed answer's JSON text (see :mod:`~signal_eval_cli.json_text`)."""

SessionKey = tuple[str, int]
"""``(case id, run)``: whose calls an interaction belongs to."""


@dataclass(slots=True)
class Interaction:
    """One recorded request and its answer (a JSON body or a list of SSE events)."""

    case: str
    call: int
    method: str
    path: str
    body: Any
    status: int
    response: Any = None
    events: list[SSEEvent] | None = None
    duration_ms: float = 0.0
    run: int = 0
    content_type: str = "application/json"

    @property
    def session(self) -> SessionKey:
        return (self.case, self.run)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case}
        if self.run:
            out["run"] = self.run
        out["call"] = self.call
        out["request"] = {"method": self.method, "path": self.path, "body": self.body}
        answer: dict[str, Any] = {"status": self.status, "durationMs": round(self.duration_ms, 3)}
        if self.events is not None:
            answer["stream"] = [_event_data(e) for e in self.events]
        else:
            if self.content_type != "application/json":
                answer["contentType"] = self.content_type
            answer["body"] = self.response
        out["response"] = answer
        return out

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> Interaction:
        request, answer = item["request"], item["response"]
        stream = answer.get("stream")
        return cls(
            case=str(item["case"]),
            call=int(item.get("call", 0)),
            method=str(request.get("method", "POST")),
            path=str(request["path"]),
            body=request.get("body"),
            status=int(answer.get("status", 200)),
            response=answer.get("body"),
            events=[_event(e) for e in stream] if stream is not None else None,
            duration_ms=float(answer.get("durationMs", 0.0)),
            run=int(item.get("run", 0)),
            content_type=str(answer.get("contentType", "application/json")),
        )

    def body_bytes(self) -> bytes:
        if isinstance(self.response, str) and self.content_type != "application/json":
            return self.response.encode()
        return _compact(self.response).encode()


def _event_data(event: SSEEvent) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if event.event is not None:
        out["event"] = event.event
    try:
        data = json.loads(event.data) if event.data not in ("", "[DONE]") else event.data
    except json.JSONDecodeError:
        data = event.data
    out["data"] = data  # parsed, so it reads and diffs well (replayed compact, same value)
    return out


def _event(item: Mapping[str, Any]) -> SSEEvent:
    data = item.get("data", "")
    text = data if isinstance(data, str) else _compact(data)
    event = item.get("event")
    return SSEEvent(text, str(event) if event is not None else None)


def _problems(doc: Document) -> list[Problem]:
    data = doc.data
    if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
        return [doc.problem((), "a proxy cassette is a mapping with an 'interactions' list")]
    if data.get("version", PROXY_CASSETTE_VERSION) != PROXY_CASSETTE_VERSION:
        return [
            doc.problem(("version",), f"unsupported version (expected {PROXY_CASSETTE_VERSION})")
        ]
    problems = []
    for i, item in enumerate(data["interactions"]):
        where: tuple[str | int, ...] = ("interactions", i)
        if not isinstance(item, Mapping):
            problems.append(doc.problem(where, "an interaction is a mapping"))
            continue
        for name, kind in (("case", str), ("request", Mapping), ("response", Mapping)):
            if not isinstance(item.get(name), kind):
                problems.append(doc.problem((*where, name), f"'{name}' is missing or mistyped"))
        request, answer = item.get("request"), item.get("response")
        if isinstance(request, Mapping) and not isinstance(request.get("path"), str):
            problems.append(doc.problem((*where, "request"), "request needs a 'path'"))
        if isinstance(answer, Mapping):
            stream = answer.get("stream")
            if stream is not None and not (
                isinstance(stream, list) and all(isinstance(e, Mapping) for e in stream)
            ):
                problems.append(
                    doc.problem((*where, "response", "stream"), "stream is a list of events")
                )
            for name in ("status", "call", "run"):
                holder = answer if name == "status" else item
                if name in holder and not isinstance(holder[name], int):
                    problems.append(doc.problem((*where, name), f"'{name}' must be an integer"))
    return problems


def interactions_from_document(doc: Document) -> list[Interaction]:
    problems = _problems(doc)
    if problems:
        raise InputError(problems)
    return [Interaction.from_dict(item) for item in doc.data["interactions"]]


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Multi-line strings as ``|`` blocks, so recorded prose stays readable."""


def _represent_str(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _read(path: Path) -> list[Interaction]:
    """Read as every input file is (:func:`load_document`: libyaml's events for plain
    data, the located and bounded loader for anything else). PyYAML's own loader, once
    the fast path here, took aliases as they were written: one that named itself inside
    a recorded stream made a cyclic value that ended the run in a RecursionError."""
    return interactions_from_document(load_document(path))


def _file_name(case: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", case) + ".yaml"


class ProxyCassette:
    """Where a run's interactions live: one file, or one file per case in a directory."""

    def __init__(self, path: str | Path, *, per_case: bool = False) -> None:
        self.path = Path(path)
        self.per_case = per_case

    def exists(self) -> bool:
        if self.per_case:
            return self.path.is_dir() and any(self.path.glob("*.yaml"))
        return self.path.is_file()

    def load(self) -> list[Interaction]:
        if not self.exists():
            return []
        if self.per_case:
            return [i for f in sorted(self.path.glob("*.yaml")) for i in _read(f)]
        return _read(self.path)

    def save(
        self,
        updates: Mapping[SessionKey, Sequence[Interaction]],
        *,
        replace: bool,
        case_order: Sequence[str] = (),
    ) -> list[Path]:
        """Merge the sessions in ``updates`` into what is on disk and write the files
        that changed. ``replace``: a session's new calls replace its old ones (record);
        else they are added after them (record-missing). Returns the files written. With no
        ``updates``, makes an empty cassette file when there is none."""
        if not updates and (self.per_case or self.exists()):
            return []
        if self.per_case:
            written = []
            for case in dict.fromkeys(key[0] for key in updates):
                target = ProxyCassette(self.path / _file_name(case))
                mine = {k: v for k, v in updates.items() if k[0] == case}
                written += target.save(mine, replace=replace, case_order=case_order)
            return written
        merged = merge(self.load(), updates, replace=replace, case_order=case_order)
        data = {
            "version": PROXY_CASSETTE_VERSION,
            "interactions": [i.to_dict() for i in merged],
        }
        try:
            text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        except UnicodeEncodeError:  # a lone surrogate, which YAML cannot hold (escaped or not)
            text = yaml.dump(
                without_lone_surrogates(data),
                Dumper=_Dumper,
                sort_keys=False,
                allow_unicode=True,
                width=100,
            )
        atomic_write_text(self.path, text)
        return [self.path]


def merge(
    old: Iterable[Interaction],
    updates: Mapping[SessionKey, Sequence[Interaction]],
    *,
    replace: bool,
    case_order: Sequence[str],
) -> list[Interaction]:
    """Old interactions of untouched sessions kept; sessions sorted by case order, then the
    other cases the file had in its order, then new ones by id (whatever order they were
    recorded in), each case's runs in order."""
    sessions: dict[SessionKey, list[Interaction]] = {}
    cases: dict[str, int] = {}
    for item in old:
        sessions.setdefault(item.session, []).append(item)
        cases.setdefault(item.case, len(cases))
    for key, new in updates.items():
        kept = [] if replace else sessions.get(key, [])
        sessions[key] = [*kept, *new]
    rank = {case: i for i, case in enumerate(case_order)}

    def order(key: SessionKey) -> tuple[int, int, str, int]:
        case, run = key
        if case in rank:
            return (rank[case], 0, "", run)
        return (len(rank), cases.get(case, len(cases)), "" if case in cases else case, run)

    return [item for key in sorted(sessions, key=order) for item in sessions[key]]
