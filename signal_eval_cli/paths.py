"""The one rule for paths a user writes in a file: resolved once, against that file.

A relative path in a dataset, matrix, agents or scenario file means "relative to the
directory of the file that names it", whatever the current directory. It is made
absolute the moment it is read (:func:`resolve_from`), so a second join (a provider
registry, a harness factory) is a no-op and can never double it.

The harness cassette, when nothing names one, is ``cassettes/<dataset-stem>.yaml``
beside the dataset (:func:`default_cassette`); the judge's is the harness cassette with
``.judge`` before its extension (by default ``cassettes/<dataset-stem>.judge.yaml``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["base_dir_of", "default_cassette", "harness_cassette", "resolve_from"]


def resolve_from(path: str | os.PathLike[str], base_dir: str | os.PathLike[str] | None) -> Path:
    """``path`` made absolute: as it is when absolute, else joined to ``base_dir`` (else cwd)."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return candidate
    return Path(os.path.abspath(Path(base_dir or ".") / candidate))


def base_dir_of(file: str | os.PathLike[str]) -> Path:
    """The absolute directory of ``file``: the base of the relative paths it names."""
    return Path(os.path.abspath(file)).parent


def default_cassette(dataset_path: str | os.PathLike[str]) -> Path:
    """``cassettes/<dataset-stem>.yaml`` beside the dataset, absolute."""
    return base_dir_of(dataset_path) / "cassettes" / f"{Path(dataset_path).stem}.yaml"


def harness_cassette(
    cassette: str | os.PathLike[str] | None,
    dataset_path: str | os.PathLike[str] | None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The harness cassette, absolute: ``cassette`` resolved against ``base_dir`` (by
    default the dataset's directory), else :func:`default_cassette` of the dataset;
    ``None`` when neither is known. The one rule the reactive harness and the run's
    provider options both follow."""
    if cassette is not None:
        if base_dir is None and dataset_path is not None:
            base_dir = base_dir_of(dataset_path)
        return resolve_from(cassette, base_dir)
    return default_cassette(dataset_path) if dataset_path is not None else None
