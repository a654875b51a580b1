"""The proxy of a dataset's run: its cassette, mode and matching, from the ``proxy:``
section of the dataset and the run's flags.

The cassette is ``cassettes/<dataset>.proxy.yaml`` beside the dataset (with
``perCase: true`` a directory ``cassettes/<dataset>.proxy/`` of ``<case>.yaml``
files), or ``proxy.cassette``. ``auto`` replays when that cassette exists and
passes calls through live otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.paths import base_dir_of, resolve_from
from signal_eval_cli.pricing import PriceTable
from signal_eval_cli.proxy.cassette import ProxyCassette
from signal_eval_cli.proxy.recorder import MODES, Mode
from signal_eval_cli.proxy.server import ModelProxy

__all__ = ["proxy_cassette", "proxy_for"]


def proxy_cassette(dataset: EvalDataset) -> ProxyCassette:
    """Where the dataset's proxied calls are recorded."""
    base_dir = base_dir_of(dataset.path) if dataset.path is not None else Path.cwd()
    settings: Mapping[str, Any] = dataset.proxy
    per_case = bool(settings.get("perCase"))
    explicit = settings.get("cassette")
    if explicit:
        path = resolve_from(str(explicit), base_dir)
    else:
        stem = dataset.path.stem if dataset.path is not None else "dataset"
        path = base_dir / "cassettes" / (f"{stem}.proxy" if per_case else f"{stem}.proxy.yaml")
    return ProxyCassette(path, per_case=per_case)


def proxy_for(
    dataset: EvalDataset,
    mode: str = "auto",
    *,
    case_order: Sequence[str] = (),
    prices: PriceTable | None = None,
    cassette: ProxyCassette | None = None,
) -> ModelProxy:
    """A (not yet started) proxy for a run of ``dataset`` in ``mode`` (or ``auto``), on
    the dataset's cassette or on ``cassette`` (a matrix variant's own)."""
    cassette = cassette or proxy_cassette(dataset)
    if mode == "auto":
        mode = "replay" if cassette.exists() else "live"
    if mode not in MODES:
        raise ValueError(f"unknown proxy mode {mode!r}")
    chosen: Mode = mode
    settings = dataset.proxy
    return ModelProxy(
        cassette,
        chosen,
        match=settings.get("match"),
        timing=bool(settings.get("timing")),
        case_order=case_order,
        prices=prices,
    )
