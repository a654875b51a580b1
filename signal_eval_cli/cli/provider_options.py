"""The model-provider options of ``signal-eval run``, folded into harness params and a judge.

``--provider openai:<model>`` (or ``provider:`` in the dataset's harness params)
makes the harness call a real model; ``--record`` records every call into the
dataset's cassette, ``--record-missing`` only the calls it lacks, ``--replay``
(the default when the cassette exists) never touches the network.
``--max-connections`` bounds the calls in flight per provider, ``--price`` overrides
the price table, ``--judge-model`` sets the default ``llm.judge`` model. The judge's
calls go to ``<cassette>.judge.yaml`` beside the harness cassette, in the same mode.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from signal_eval_cli import paths
from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import load_factory
from signal_eval_cli.paths import base_dir_of, resolve_from
from signal_eval_cli.providers.pricing import parse_price
from signal_eval_cli.providers.recording import save_all
from signal_eval_cli.runner import RunOptions

if TYPE_CHECKING:
    from signal_eval_cli.providers.pricing import PriceTable
    from signal_eval_cli.proxy.cassette import ProxyCassette
    from signal_eval_cli.proxy.server import ModelProxy

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


def default_cassette(dataset: EvalDataset, params: Mapping[str, Any]) -> Path:
    """The harness cassette, absolute: ``params['cassette']``, else the default (paths.py)."""
    dataset_path = dataset.path if dataset.path is not None else Path("dataset.yaml")
    explicit = params.get("cassette")
    if explicit:
        return resolve_from(str(explicit), base_dir_of(dataset_path))
    return paths.default_cassette(dataset_path)


def _judge_cassette(cassette: Path) -> Path:
    return cassette.with_name(f"{cassette.stem}.judge{cassette.suffix or '.yaml'}")


def _declares(factory: Any, name: str) -> bool:
    """Whether the factory names ``name`` as a parameter (``**kwargs`` does not count: a
    harness must never receive options it did not ask for)."""
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


@dataclass
class ProviderFlags:
    """What the provider options of ``run`` asked for."""

    provider: str | None = None
    record: bool = False
    record_missing: bool = False
    replay: bool = False
    max_connections: int | None = None
    judge_model: str | None = None
    prices: list[str] = field(default_factory=list)
    live: bool = False

    @property
    def mode(self) -> str:
        chosen = [
            name
            for name, on in (
                ("record", self.record),
                ("record-missing", self.record_missing),
                ("replay", self.replay),
                ("live", self.live),
            )
            if on
        ]
        if len(chosen) > 1:
            raise InputError(f"choose one of --{', --'.join(chosen)}")
        return chosen[0] if chosen else "auto"

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.max_connections is not None:
            options["max_connections"] = self.max_connections
        if self.prices:
            options["prices"] = dict(parse_price(p) for p in self.prices)
        return options

    def harness_params(
        self, dataset: EvalDataset, harness: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``params`` for the harness factory, with ``provider`` and ``provider_options``
        set for a harness that declares them (the built-in reactive one). Any other
        harness makes its own calls, which the run's proxy records and replays."""
        mode = self.mode
        spec = dataset.harness if harness is None else None
        base = dict(spec.params) if spec is not None else {}
        merged = {**base, **params}
        factory_name = harness or (spec.factory if spec is not None else None)
        if factory_name is not None:
            base_dir = base_dir_of(dataset.path) if dataset.path is not None else None
            factory = load_factory(factory_name, base_dir=base_dir)
            if not _declares(factory, "provider_options"):
                if self.provider and not _declares(factory, "provider"):
                    raise InputError(
                        f"harness '{factory_name}' takes no 'provider' parameter: its own model "
                        "calls are recorded and replayed through the run's proxy without one "
                        "(drop --provider)"
                    )
                return {**params, "provider": self.provider} if self.provider else params
        provider = self.provider or merged.get("provider")
        if mode == "live":
            mode = "auto"
        if (
            not isinstance(provider, str)
            or provider == "cassette"
            or provider.startswith("cassette:")
        ):
            if mode in ("record", "record-missing"):
                raise InputError(
                    "--record needs a real provider: pass --provider openai:<model> or "
                    "anthropic:<model>, or set provider in the harness params"
                )
            if self.provider:
                return {**params, "provider": self.provider}
            return params
        given = dict(merged.get("provider_options") or {})
        flags = self._options()
        prices = {**dict(given.get("prices") or {}), **flags.pop("prices", {})}
        options = {**given, **flags}
        if prices:
            options["prices"] = prices
        cassette = default_cassette(dataset, merged)
        options["cassette"] = str(cassette)
        options["mode"] = mode
        if self.provider and mode in ("auto", "replay") and cassette.is_file():
            # an explicit --provider that the cassette answers for must not go unnoticed
            typer.echo(
                f"replaying {cassette} (recorded calls; use --record to call {provider})",
                err=True,
            )
        return {**params, "provider": provider, "provider_options": options}

    def configure_judge(
        self, dataset: EvalDataset, options: RunOptions, params: dict[str, Any]
    ) -> None:
        """Give ``options`` a real judge when the dataset has ``llm.judge`` assertions."""
        from signal_eval_cli.judges import LLMJudge, resolve_judge_model

        model = resolve_judge_model(self.judge_model, dataset.judge_model)
        options.judge_model = model
        if not dataset.uses_judge():
            return
        spec = dataset.harness
        merged = {**(dict(spec.params) if spec is not None else {}), **params}
        cassette = _judge_cassette(default_cassette(dataset, merged))
        mode = "auto" if self.mode == "live" else self.mode
        if mode == "replay" and not cassette.is_file():
            raise InputError(f"{cassette}: judge cassette not found (record it with --record)")
        options.judge = LLMJudge(
            model, provider_options=self._options(), cassette=cassette, mode=mode
        )

    def proxy(self, dataset: EvalDataset, cassette: ProxyCassette | None = None) -> ModelProxy:
        """A (not yet started) model proxy for a run of ``dataset`` in this mode, on its
        cassette or on ``cassette`` (a matrix variant's own)."""
        from signal_eval_cli.proxy.config import proxy_for

        order = [c.id for c in dataset.cases]
        prices = self.price_table()
        return proxy_for(dataset, self.mode, case_order=order, prices=prices, cassette=cassette)

    def price_table(self) -> PriceTable:
        """The price table with ``--price`` overrides."""
        from signal_eval_cli.providers.pricing import default_prices

        return default_prices().with_overrides(self._options().get("prices"))

    def start_proxy(self, dataset: EvalDataset, options: RunOptions) -> None:
        """Start the run's model proxy (``options.proxy``): the harness's own calls are
        replayed, recorded or passed through, and traced, whichever harness it is."""
        options.proxy = self.proxy(dataset).start()

    @staticmethod
    def finish(options: RunOptions) -> None:
        """Save every recording (saying where it went), stop the proxy and the judge."""
        for saved in save_all():
            typer.echo(f"recorded {saved.recorded} call(s) to {saved.path}", err=True)
        if options.proxy is not None:
            stop_proxy(options.proxy)
        close = getattr(options.judge, "close", None)
        if callable(close):
            close()


def stop_proxy(proxy: ModelProxy) -> None:
    """Stop ``proxy`` and write what it recorded, saying where it went and what it lacked."""
    proxy.stop()
    for path in proxy.save():
        typer.echo(f"recorded the harness's model calls to {path}", err=True)
    if proxy.misses:
        typer.echo(
            f"{len(proxy.misses)} model call(s) had no recording in "
            f"{proxy.cassette.path if proxy.cassette else 'the cassette'}",
            err=True,
        )
    for failure in proxy.failures[:5]:
        typer.echo(f"not recorded: {failure}", err=True)
