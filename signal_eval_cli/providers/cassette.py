"""Cassettes: model responses recorded per case, agent and call, replayed offline.

A cassette is YAML (``.yaml``/``.yml``/``.json``) or JSONL (``.jsonl``, one entry per
line)::

    version: 1
    entries:
      - case: sql-injection          # case id
        agent: reviewer              # agent id
        call: 0                      # this agent's n-th call within the case
        request: 3fa29c0d11e2ab44    # optional ProviderRequest.key at recording time
        response: {text: "...", deltas: [...], toolCalls: [...], usage: {...},
                   cost: 0.0012, latencyMs: 850, model: claude-sonnet}

Entries are keyed by ``(case, agent, call)`` rather than by the request hash so a
hand-written cassette stays readable and a prompt edit is reported as "changed
since recording" (when ``request`` was recorded) instead of as a bare miss. A
request with no entry is a :class:`ProviderError` naming all of it — never an
empty answer.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_text
from signal_eval_cli.loading import Document, Location, load_document, validate_document
from signal_eval_cli.providers.base import ProviderError, ProviderRequest, ProviderResponse
from signal_eval_cli.signals import json_lines
from signal_eval_cli.validate import DocumentKind, register_document_kind

__all__ = ["CASSETTE_VERSION", "Cassette", "CassetteEntry", "CassetteProvider"]

CASSETTE_VERSION = 1

EntryKey = tuple[str, str, int]


@dataclass(slots=True)
class CassetteEntry:
    """One recorded model call."""

    case: str
    agent: str
    call: int
    response: ProviderResponse
    request: str | None = None

    @classmethod
    def of(cls, request: ProviderRequest, response: ProviderResponse) -> CassetteEntry:
        """The recording of ``response`` as the answer to ``request``."""
        return cls(
            request.case_id, request.agent, request.call, copy.deepcopy(response), request.key
        )

    @property
    def key(self) -> EntryKey:
        return (self.case, self.agent, self.call)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case, "agent": self.agent, "call": self.call}
        if self.request is not None:
            out["request"] = self.request
        out["response"] = self.response.to_dict()
        return out


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() == ".jsonl"


class Cassette:
    """Recorded responses of one dataset; load, look up, record, save."""

    def __init__(self, path: str | Path, entries: list[CassetteEntry] | None = None) -> None:
        self.path = Path(path)
        self._entries: dict[EntryKey, CassetteEntry] = {}
        for entry in entries or []:
            self._entries[entry.key] = entry
        self._case_order = list(dict.fromkeys(e.case for e in self._entries.values()))

    # -- construction -------------------------------------------------------------

    @classmethod
    def empty(cls, path: str | Path) -> Cassette:
        """A cassette with no entries that :meth:`save` will write to ``path``."""
        return cls(path)

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        """Read and validate a cassette; every problem is reported with ``file:line:col``."""
        target = Path(path)
        return cls.from_document(
            _load_jsonl(target) if _is_jsonl(target) else load_document(target)
        )

    @classmethod
    def from_document(cls, doc: Document) -> Cassette:
        """Validate a parsed cassette (schema, then duplicates and consistency)."""
        if not isinstance(doc.data, Mapping):
            raise InputError([doc.problem((), "a cassette must be a mapping with 'entries'")])
        problems = validate_document(doc, "cassette")
        if not problems:
            problems = list(_semantic_problems(doc))
        if problems:
            raise InputError(problems)
        entries = [
            CassetteEntry(
                case=item["case"],
                agent=item["agent"],
                call=item["call"],
                response=ProviderResponse.from_dict(item["response"]),
                request=item.get("request"),
            )
            for item in doc.data["entries"]
        ]
        return cls(doc.path, entries)

    # -- use ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[CassetteEntry]:
        return iter(self._entries.values())

    def has(self, request: ProviderRequest) -> bool:
        return _key(request) in self._entries

    def lookup(self, request: ProviderRequest) -> ProviderResponse:
        """The recorded response to ``request`` (a copy: callers may mutate it).

        Raises :class:`ProviderError` with code ``cassette_miss`` when nothing was
        recorded for this case, agent and call, and ``cassette_stale`` when the
        recorded request key differs from the live one.
        """
        entry = self._entries.get(_key(request))
        if entry is None:
            raise ProviderError(self._miss_message(request), code="cassette_miss")
        if entry.request is not None and entry.request != request.key:
            raise ProviderError(
                f"cassette {self.path}: request changed since recording (re-record with "
                f"--record): case '{request.case_id}', agent '{request.agent}', call "
                f"#{request.call}: recorded request {entry.request}, live request {request.key}",
                code="cassette_stale",
            )
        return copy.deepcopy(entry.response)

    def _miss_message(self, request: ProviderRequest) -> str:
        recorded = sorted(
            e.call for e in self._entries.values() if e.case == request.case_id
            and e.agent == request.agent
        )  # fmt: skip
        if recorded:
            have = f"calls recorded for this case and agent: {', '.join(map(str, recorded))}"
        elif any(e.case == request.case_id for e in self._entries.values()):
            agents = sorted({e.agent for e in self._entries.values() if e.case == request.case_id})
            have = f"agents recorded for this case: {', '.join(agents)}"
        else:
            have = "nothing is recorded for this case"
        return (
            f"cassette {self.path} has no response for case '{request.case_id}', agent "
            f"'{request.agent}', call #{request.call} (request {request.key}); {have}. "
            "Record it with --record or add the entry by hand."
        )

    def record(self, request: ProviderRequest, response: ProviderResponse) -> None:
        """Store ``response`` as the answer to ``request`` (replacing an older one)."""
        self.put(CassetteEntry.of(request, response))

    def put(self, entry: CassetteEntry) -> None:
        """Store ``entry`` (replacing an older one with its key)."""
        self._entries[entry.key] = entry

    def to_dict(self, case_order: Sequence[str] | None = None) -> dict[str, Any]:
        """The cassette as data, in a deterministic order, so a re-recording diffs cleanly.

        Cases come in ``case_order`` (a recorder passes the dataset's), else in the
        order the loaded file had them, then new cases by id; within a case, entries
        keep the order they were loaded or recorded in (a case's calls are made in
        order, so that order does not depend on which cases ran concurrently).
        """
        rank = {case: i for i, case in enumerate(case_order or self._case_order)}
        position = {key: i for i, key in enumerate(self._entries)}

        def sort_key(entry: CassetteEntry) -> tuple[int, str, int]:
            known = rank.get(entry.case)
            if known is not None:
                return (known, "", position[entry.key])
            return (len(rank), entry.case, position[entry.key])

        ordered = sorted(self._entries.values(), key=sort_key)
        return {"version": CASSETTE_VERSION, "entries": [e.to_dict() for e in ordered]}

    def dumps(self, case_order: Sequence[str] | None = None) -> str:
        data = self.to_dict(case_order)
        if _is_jsonl(self.path):
            return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in data["entries"])
        if self.path.suffix.lower() == ".json":
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)

    def save(self, case_order: Sequence[str] | None = None) -> None:
        """Write atomically: an interrupted recording never leaves half a cassette."""
        atomic_write_text(self.path, self.dumps(case_order))


def _key(request: ProviderRequest) -> EntryKey:
    return (request.case_id, request.agent, request.call)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as ``|`` blocks, so recorded code and prose stay readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def _load_jsonl(path: Path) -> Document:
    """A JSONL cassette as a Document whose entries point at their lines."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError([Problem(name, 1, 1, "not UTF-8 text")]) from None
    except OSError as exc:
        raise InputError([Problem(name, 0, 0, f"cannot read file: {exc.strerror}")]) from None
    entries: list[Any] = []
    values: dict[tuple[str | int, ...], Location] = {(): Location(1, 1)}
    problems: list[Problem] = []
    for lineno, entry in json_lines(text, name, problems, "invalid JSON"):
        values[("entries", len(entries))] = Location(lineno, 1)
        entries.append(entry)
    if problems:
        raise InputError(problems)
    return Document(name, {"version": CASSETTE_VERSION, "entries": entries}, values, {})


def _semantic_problems(doc: Document) -> Iterator[Problem]:
    """Duplicate keys, tool-call ids reused within a case, deltas that miss the text.

    Tool-call ids must be unique per case because ``tool:result`` joins its call by id.
    """
    seen: dict[EntryKey, int] = {}
    tool_ids: dict[tuple[str, str], int] = {}
    for i, item in enumerate(doc.data["entries"]):
        key = (item["case"], item["agent"], item["call"])
        if key in seen:
            yield doc.problem(
                ("entries", i),
                f"duplicate entry for case '{key[0]}', agent '{key[1]}', call {key[2]} "
                f"(first at entry {seen[key] + 1})",
            )
        seen.setdefault(key, i)
        response = item["response"]
        for j, tool in enumerate(response.get("toolCalls", [])):
            if (item["case"], tool["id"]) in tool_ids:
                yield doc.problem(
                    ("entries", i, "response", "toolCalls", j, "id"),
                    f"tool call id '{tool['id']}' is used twice in case '{item['case']}' "
                    f"(first at entry {tool_ids[(item['case'], tool['id'])] + 1})",
                )
            tool_ids.setdefault((item["case"], tool["id"]), i)
        deltas = response.get("deltas")
        if deltas is not None and "".join(deltas) != response["text"]:
            yield doc.problem(
                ("entries", i, "response", "deltas"), "deltas do not add up to the text"
            )


class CassetteProvider:
    """Replays a cassette: streams the recorded deltas, reports the recorded latency.

    ``latency_scale`` > 0 really sleeps that fraction of the recorded latency
    (1.0 = real time), to exercise timeouts and concurrency; the default 0 replays
    at once.
    """

    name = "cassette"

    def __init__(self, cassette: Cassette | str | Path, *, latency_scale: float = 0.0) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else Cassette.load(cassette)
        if latency_scale < 0:
            raise ValueError("latency_scale must be >= 0")
        self.latency_scale = latency_scale

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        response = self.cassette.lookup(request)
        if self.latency_scale and response.latency_ms:
            await asyncio.sleep(response.latency_ms * self.latency_scale / 1000)
        if on_delta is not None and response.deltas:
            for chunk in response.deltas:
                on_delta(chunk)
        return response


register_document_kind(
    DocumentKind(
        "cassette", lambda data: "entries" in data and "version" in data, Cassette.from_document
    )
)
