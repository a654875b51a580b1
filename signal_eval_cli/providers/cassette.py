"""Cassettes of the built-in providers: model responses recorded per case, agent and call.

A cassette is YAML (``.yaml``/``.yml``/``.json``) or JSONL (``.jsonl``, one entry per
line)::

    version: 1
    entries:
      - case: sql-injection          # case id (and ``run: N`` for repeats after the first)
        agent: reviewer              # agent id
        call: 0                      # this agent's n-th call within the case
        request: 3fa29c0d11e2ab44    # optional ProviderRequest.key at recording time
        response: {text: "...", deltas: [...], toolCalls: [...], usage: {...},
                   cost: 0.0012, latencyMs: 850, model: claude-sonnet}

Entries name the case, agent and call rather than only the request hash, so a
hand-written cassette stays readable (without ``request``, an agent's entries answer its
calls in order) and a prompt edit is reported as a change since recording.

This is one file format of the run's one record/replay path
(:class:`~signal_eval_cli.proxy.recorder.Recorder`): :class:`CassetteFile` reads and
writes it as recorded interactions (the agent as the path, the request key as the body),
which :class:`~signal_eval_cli.providers.recording.RecordingProvider` replays and records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_text, read_input_text, without_lone_surrogates
from signal_eval_cli.loading import Document, Location, load_document, validate_document
from signal_eval_cli.providers.base import ProviderResponse
from signal_eval_cli.proxy.cassette import Interaction, SessionKey, merge
from signal_eval_cli.signals import json_lines

__all__ = ["AGENT_CALL", "CASSETTE_VERSION", "Cassette", "CassetteEntry", "CassetteFile"]

CASSETTE_VERSION = 1

EntryKey = tuple[str, int, str, int]
"""``(case, run, agent, call)``."""

AGENT_CALL = "agent"
"""The method of an entry as an :class:`Interaction` (its path is the agent's id)."""


@dataclass(slots=True)
class CassetteEntry:
    """One recorded model call."""

    case: str
    agent: str
    call: int
    response: ProviderResponse
    request: str | None = None
    run: int = 0

    @property
    def key(self) -> EntryKey:
        return (self.case, self.run, self.agent, self.call)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case}
        if self.run:
            out["run"] = self.run
        out.update(agent=self.agent, call=self.call)
        if self.request is not None:
            out["request"] = self.request
        out["response"] = self.response.to_dict()
        return out

    def interaction(self) -> Interaction:
        """As the recorder keeps it: the agent as the path, the request key as the body."""
        latency = self.response.latency_ms
        return Interaction(
            self.case,
            self.call,
            AGENT_CALL,
            self.agent,
            self.request,
            200,
            self.response.to_dict(),
            duration_ms=float(latency or 0.0),
            run=self.run,
        )

    @classmethod
    def of(cls, item: Interaction) -> CassetteEntry:
        response = ProviderResponse.from_dict(item.response)
        return cls(item.case, item.path, item.call, response, item.body, item.run)


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() == ".jsonl"


class Cassette:
    """A cassette file's entries: load and validate, or write."""

    def __init__(self, path: str | Path, entries: list[CassetteEntry] | None = None) -> None:
        self.path = Path(path)
        self.entries = list(entries or [])

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
                run=item.get("run", 0),
            )
            for item in doc.data["entries"]
        ]
        return cls(doc.path, entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[CassetteEntry]:
        return iter(self.entries)

    def dumps(self) -> str:
        # a lone surrogate (a model's answer cut inside an emoji's pair) as U+FFFD: the
        # YAML and JSON readers refuse it even escaped, so the next run could not load it
        entries = without_lone_surrogates([e.to_dict() for e in self.entries])
        if _is_jsonl(self.path):
            return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
        data = {"version": CASSETTE_VERSION, "entries": entries}
        if self.path.suffix.lower() == ".json":
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


class CassetteFile:
    """A cassette as a :class:`~signal_eval_cli.proxy.recorder.Store`: what the recorder
    replays (an agent's entries in call order) and where it saves."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> list[Interaction]:
        if not self.exists():
            return []
        entries = Cassette.load(self.path).entries
        first: dict[SessionKey, int] = {}
        for i, entry in enumerate(entries):
            first.setdefault((entry.case, entry.run), i)
        entries.sort(key=lambda e: (first[(e.case, e.run)], e.call))
        return [e.interaction() for e in entries]

    def save(
        self,
        updates: Mapping[SessionKey, Sequence[Interaction]],
        *,
        replace: bool,
        case_order: Sequence[str] = (),
    ) -> list[Path]:
        """Merge ``updates`` into the file (as :meth:`ProxyCassette.save
        <signal_eval_cli.proxy.cassette.ProxyCassette.save>`); a call recorded again
        (record-missing after a prompt change) replaces its older entry."""
        if not updates and self.exists():
            return []
        merged = merge(self.load(), updates, replace=replace, case_order=case_order)
        entries: dict[EntryKey, CassetteEntry] = {}
        for item in merged:
            entry = CassetteEntry.of(item)
            entries.pop(entry.key, None)
            entries[entry.key] = entry
        atomic_write_text(self.path, Cassette(self.path, list(entries.values())).dumps())
        return [self.path]


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
        text = read_input_text(path)
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
    """Duplicate keys, tool-call ids reused within a case run, deltas that miss the text.

    Tool-call ids must be unique per case run because ``tool:result`` joins its call by id.
    """
    seen: dict[EntryKey, int] = {}
    tool_ids: dict[tuple[str, int, str], int] = {}
    for i, item in enumerate(doc.data["entries"]):
        key = (item["case"], item.get("run", 0), item["agent"], item["call"])
        if key in seen:
            run = f" run {key[1]}" if key[1] else ""
            yield doc.problem(
                ("entries", i),
                f"duplicate entry for case '{key[0]}'{run}, agent '{key[2]}', call {key[3]} "
                f"(first at entry {seen[key] + 1})",
            )
        seen.setdefault(key, i)
        response = item["response"]
        for j, tool in enumerate(response.get("toolCalls", [])):
            where = (key[0], key[1], tool["id"])
            if where in tool_ids:
                yield doc.problem(
                    ("entries", i, "response", "toolCalls", j, "id"),
                    f"tool call id '{tool['id']}' is used twice in case '{item['case']}' "
                    f"(first at entry {tool_ids[where] + 1})",
                )
            tool_ids.setdefault(where, i)
        deltas = response.get("deltas")
        if deltas is not None and "".join(deltas) != response["text"]:
            yield doc.problem(
                ("entries", i, "response", "deltas"), "deltas do not add up to the text"
            )
