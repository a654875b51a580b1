"""The model-provider options of ``signal-eval run`` (and ``matrix``, ``scenario``).

``--provider openai:<model>`` (or ``provider:`` in the dataset's harness params)
makes the harness call a real model; ``--record`` records every call into the
dataset's cassette, ``--record-missing`` only the calls it lacks, ``--replay``
(the default when the cassette exists) never touches the network.
``--max-connections`` bounds the calls in flight per provider, ``--price`` overrides
the price table, ``--judge-model`` sets the default ``llm.judge`` model. What they
mean is the library's :class:`~signal_eval_cli.run_config.ProviderPolicy`; this module
only declares them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from signal_eval_cli.run_config import ProviderPolicy, default_cassette, stop_proxy

__all__ = [
    "JudgeModelOpt",
    "LiveOpt",
    "MaxConnectionsOpt",
    "PriceOpt",
    "ProviderFlags",
    "ProviderOpt",
    "RecordMissingOpt",
    "RecordOpt",
    "ReplayOpt",
    "default_cassette",
    "stop_proxy",
]

ProviderFlags = ProviderPolicy
"""The old name of :class:`~signal_eval_cli.run_config.ProviderPolicy`."""

ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="Model provider for the harness: openai:<model>, anthropic:<model> or cassette:<path>.",
    ),
]
RecordOpt = Annotated[
    bool,
    typer.Option(
        "--record", help="Call the real provider and record every call into the cassette."
    ),
]
RecordMissingOpt = Annotated[
    bool,
    typer.Option(
        "--record-missing", help="Replay what the cassette has; record only the calls it lacks."
    ),
]
LiveOpt = Annotated[
    bool,
    typer.Option(
        "--live",
        help="Pass the harness's model calls through to the real API; record nothing, replay nothing.",
    ),
]
ReplayOpt = Annotated[
    bool,
    typer.Option(
        "--replay",
        help="Replay the cassette only, never the network (the default when it exists).",
    ),
]
MaxConnectionsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-connections",
        min=1,
        help="Model calls in flight per provider (default 32); halves when rate-limited, then recovers.",
    ),
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="Default llm.judge model (else the dataset's judge.model, else $SIGNAL_EVAL_JUDGE_MODEL).",
    ),
]
PriceOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        help="Override a model's price: MODEL=INPUT:OUTPUT in USD per 1M tokens (repeatable).",
    ),
]
