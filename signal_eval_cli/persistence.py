"""Saving and loading results: versioned JSON, written atomically."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_text
from signal_eval_cli.results import RESULT_SCHEMA_VERSION, DatasetResult, SignalsPolicy

__all__ = ["load_result", "register_result_kind", "result_to_json", "save_result"]

_LOADERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {"dataset": DatasetResult.from_dict}


def register_result_kind(kind: str, loader: Callable[[Mapping[str, Any]], Any]) -> None:
    """Teach :func:`load_result` a new ``kind`` (matrix, comparison, scenarios…)."""
    _LOADERS[kind] = loader


def result_to_json(result: Any, signals: SignalsPolicy = "failed") -> str:
    return json.dumps(result.to_dict(signals), indent=2, ensure_ascii=False, default=str) + "\n"


def save_result(result: Any, path: str | Path, *, signals: SignalsPolicy = "failed") -> None:
    """Write ``result.to_dict()`` as JSON; a reader never sees half a file."""
    atomic_write_text(path, result_to_json(result, signals))


def load_result(path: str | Path) -> Any:
    """Load any saved result; old, foreign or malformed files raise :class:`InputError`."""
    name = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(
            [Problem(name, 0, 0, f"cannot read result file: {exc.strerror}")]
        ) from None
    except UnicodeDecodeError:
        raise InputError([Problem(name, 1, 1, "not a result file: not UTF-8 text")]) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            [Problem(name, exc.lineno, exc.colno, f"not a result file: invalid JSON: {exc.msg}")]
        ) from None
    if not isinstance(data, Mapping) or "schemaVersion" not in data:
        raise InputError([Problem(name, 1, 1, "not a signal-eval result file (no schemaVersion)")])
    version = data["schemaVersion"]
    if version != RESULT_SCHEMA_VERSION:
        raise InputError(
            [
                Problem(
                    name,
                    1,
                    1,
                    f"result schemaVersion {version!r} is not supported (this version reads "
                    f"{RESULT_SCHEMA_VERSION}); re-run to regenerate it",
                )
            ]
        )
    kind = data.get("kind")
    loader = _LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        raise InputError(
            [
                Problem(
                    name,
                    1,
                    1,
                    f"unknown result kind {kind!r} (known: {', '.join(sorted(_LOADERS))})",
                )
            ]
        )
    try:
        return loader(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            [Problem(name, 1, 1, f"malformed {kind} result: {type(exc).__name__}: {exc}")]
        ) from None
