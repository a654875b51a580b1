"""What gives a run's results their meaning, hashed: the test of whether a journal may
be resumed, and whether shards belong together.

A fingerprint is a few named parts (``dataset``, ``harness``, ``params``, ``version``…),
each a short text. Content is hashed *as parsed* (a comment or a reindented YAML file
does not change the meaning), harness code by its source file's bytes; params and the
version are kept in clear so a refusal can say what changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.workpaths import fixture_dir

if TYPE_CHECKING:
    from signal_eval_cli.dataset import EvalDataset
    from signal_eval_cli.matrix import Variant
    from signal_eval_cli.scenarios import Scenario
    from signal_eval_cli.scenarios.matrix import ScenarioMatrix

__all__ = [
    "content_hash",
    "dataset_fingerprint",
    "differences",
    "digest",
    "harness_identity",
    "matrix_fingerprint",
    "scenario_matrix_fingerprint",
    "scenarios_fingerprint",
    "tree_hash",
]

_PART_NAMES = {
    "dataset": "the dataset changed",
    "matrix": "the matrix (variants) changed",
    "scenarios": "the scenarios changed",
    "fixtures": "a scenario fixture changed",
    "harness": "the harness changed",
    "params": "the params or run options changed",
    "version": "the signal-eval version changed",
    "shard": "the shard changed",
}


def content_hash(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def canonical(value: Any) -> str:
    """``value`` as short canonical JSON, kept in clear in a fingerprint."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    except OSError:
        return None


def harness_identity(factory: str, base_dir: Path | None) -> str:
    """The entry point and, when it names a file or module we can find, its source's hash."""
    module_part, _, _ = factory.rpartition(":")
    source: Path | None = None
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        source = Path(module_part)
        if not source.is_absolute() and base_dir is not None:
            source = base_dir / source
    elif module_part:
        try:
            spec = importlib.util.find_spec(module_part)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and os.path.isfile(spec.origin):
            source = Path(spec.origin)
    digest_ = _file_hash(source) if source is not None else None
    return factory + (f"@sha256:{digest_}" if digest_ else "")


def tree_hash(root: Path) -> str:
    """SHA-256 over a directory's relative paths and what each entry holds (a fixture)."""
    sha = hashlib.sha256()
    for directory, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory, name)
            sha.update(str(path.relative_to(root)).encode() + b"\0")
            sha.update(_entry_hash(path).encode() + b"\0")
    return "sha256:" + sha.hexdigest()[:32]


def _entry_hash(path: Path) -> str:
    """A regular file's content hash; a symlink's target, never followed (it may lead
    anywhere: to /dev/zero, or out of the tree); another kind's type, never opened
    (opening a FIFO waits for a writer forever, a device reads forever)."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return "symlink:" + os.readlink(path)
    except OSError:
        return "unreadable"
    if not stat.S_ISREG(mode):
        return f"special:{stat.S_IFMT(mode):o}"
    return _file_hash(path) or "unreadable"


def digest(fingerprint: Mapping[str, str]) -> str:
    """One hash for a whole fingerprint (shards carry it to show they belong together)."""
    return content_hash(dict(fingerprint))


def differences(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """Why ``now`` means something else than ``before``: one phrase per changed part."""
    reasons = []
    for part in dict.fromkeys([*before, *now]):
        old, new = before.get(part), now.get(part)
        if old == new:
            continue
        reason = _PART_NAMES.get(part, f"{part} changed")
        if part in ("params", "version", "shard"):
            reason += f" ({_clip(old)} → {_clip(new)})"
        reasons.append(reason)
    return reasons


def _clip(text: str | None, limit: int = 120) -> str:
    if text is None:
        return "none"
    return text if len(text) <= limit else text[:limit] + "…"


def join(parts: Iterable[str]) -> str:
    """Several identities (a matrix's harnesses) as one fingerprint part."""
    return content_hash(list(parts))


def version_part() -> str:
    from signal_eval_cli import __version__

    return __version__


def dataset_fingerprint(
    dataset: EvalDataset, harness: str | None, options: Mapping[str, Any]
) -> dict[str, str]:
    """A dataset run's fingerprint: the dataset as parsed, the harness (``harness`` or the
    dataset's) with its source, and the options that change results (``options``)."""
    factory = harness or (dataset.harness.factory if dataset.harness else "")
    base_dir = dataset.path.parent if dataset.path else None  # as build_harness resolves
    return {
        "dataset": content_hash(dataset.to_data()),
        "harness": harness_identity(factory, base_dir),
        "params": canonical(dict(options)),
        "version": version_part(),
    }


def matrix_fingerprint(
    dataset: EvalDataset, variants: Iterable[Variant], options: Mapping[str, Any]
) -> dict[str, str]:
    """A matrix run's fingerprint: the dataset, each variant (its harness and source)."""
    described = []
    identities = []
    for v in variants:
        spec = v.harness if v.harness is not None else dataset.harness
        factory = spec if isinstance(spec, str) else getattr(spec, "factory", repr(spec))
        base_dir = v.base_dir if v.harness is not None else (dataset.path or Path(".")).parent
        described.append({"id": v.id, "params": v.params, "spec": canonical(spec)})
        identities.append(harness_identity(str(factory), base_dir))
    return {
        "dataset": content_hash(dataset.to_data()),
        "matrix": content_hash(described),
        "harness": join(identities),
        "params": canonical(dict(options)),
        "version": version_part(),
    }


def scenarios_fingerprint(
    scenarios: Iterable[Scenario], root: Path | None = None
) -> dict[str, str]:
    """Scenario runs: each scenario file's content, its fixture directory's, and its
    harness agent's entry point and source."""
    chosen = list(scenarios)
    sources = [
        (s.id, _file_hash(s.source) if s.source is not None else canonical(repr(s))) for s in chosen
    ]
    fixtures = {str(fixture_dir(s, root)) for s in chosen}
    return {
        "scenarios": content_hash(sources),
        "fixtures": join(tree_hash(Path(f)) for f in sorted(fixtures)),
        "harness": _agents(chosen),
        "version": version_part(),
    }


def _agents(scenarios: Iterable[Scenario]) -> str:
    """The harness agents' identities (a command agent's files are not followed)."""
    return join(
        harness_identity(s.agent.harness, s.directory)
        for s in scenarios
        if s.agent is not None and s.agent.harness is not None
    )


def scenario_matrix_fingerprint(
    matrix: ScenarioMatrix, options: Mapping[str, Any], root: Path | None = None
) -> dict[str, str]:
    """A matrix of agents over scenarios: its scenarios and fixtures, and each variant
    (its agent, params and env; a harness agent's source as each scenario runs it)."""
    return {
        **scenarios_fingerprint(matrix.scenarios, root),
        "matrix": content_hash([dataclasses.asdict(v) for v in matrix.variants]),
        "harness": _agents(s for _, scenarios in matrix.plans() for s in scenarios),
        "params": canonical(dict(options)),
    }
