"""Run configuration: the harness a run builds, its model provider, cassettes, judge, proxy.

Everything ``signal-eval run`` decides before its first case, as a library, so that a
Python user gets the same run in one call
(:func:`~signal_eval_cli.configured_dataset.run_configured`)::

    policy = ProviderPolicy(replay=True, judge_model="openai:gpt-4o-mini")
    result = asyncio.run(run_configured("datasets/code-review.yaml", policy))

:class:`ProviderPolicy` is what the provider options ask for: ``provider``
(``openai:<model>``, ``anthropic:<model>``, ``cassette:<path>``; else the harness
params' ``provider``); one mode of ``record`` (every call recorded into the cassette),
``record_missing`` (only the calls it lacks), ``replay`` (never the network; the
default when the cassette exists) or ``live`` (pass through, record nothing);
``max_connections`` per provider, ``prices`` overrides and the default ``llm.judge``
model. A harness that declares ``provider_options`` (the built-in reactive one) gets
the provider and its cassette as params; any other harness makes its own calls, which
the run's model proxy records and replays. The judge's calls go to
``<cassette>.judge.yaml`` beside the harness cassette, in the same mode.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.dataset import EvalDataset, HarnessSpec, dataset_document
from signal_eval_cli.errors import InputError, each_or_every_problem
from signal_eval_cli.harness.entrypoints import check_harness, load_factory, resolve_harness
from signal_eval_cli.harness.protocol import Harness, wants_proxy
from signal_eval_cli.paths import base_dir_of, harness_cassette, resolve_from
from signal_eval_cli.providers.pricing import parse_price
from signal_eval_cli.runner import RunOptions, check_filters, select_cases
from signal_eval_cli.validate import check_dataset, runnable_dataset

if TYPE_CHECKING:
    from signal_eval_cli.providers.pricing import PriceTable
    from signal_eval_cli.proxy.cassette import ProxyCassette
    from signal_eval_cli.proxy.server import ModelProxy

__all__ = [
    "PreparedRun",
    "ProviderPolicy",
    "build_harness",
    "check_harness_of",
    "default_cassette",
    "files_read",
    "harness_spec",
    "judge_cassette",
    "load_datasets",
    "prepare_run",
    "stop_proxy",
]

Note = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_cassette(dataset: EvalDataset, params: Mapping[str, Any]) -> Path:
    """The harness cassette, absolute: ``params['cassette']``, else the default (paths.py)."""
    dataset_path = dataset.path if dataset.path is not None else Path("dataset.yaml")
    explicit = params.get("cassette")
    path = harness_cassette(str(explicit) if explicit else None, dataset_path)
    assert path is not None  # a dataset path is always given
    return path


def files_read(
    dataset: EvalDataset,
    harness: HarnessSpec | str | None = None,
    params: Mapping[str, Any] | None = None,
    base_dir: Path | None = None,
) -> list[Path]:
    """The user's files a run of ``dataset`` reads, which no report may be written over:
    the dataset, its harness's file (``file.py:attr``; ``harness``, resolved against
    ``base_dir``, when it replaces the dataset's), each harness param that names a file
    (``agents``, ``cassette``; ``params`` merged over the spec's) and the recordings it
    replays (the harness's, the judge's, the model proxy's cassettes)."""
    home = base_dir_of(dataset.path) if dataset.path is not None else Path.cwd()
    factory: str | None = None  # none (a run of recorded traces): only params name files
    named = dict(params or {})
    if harness is not None or dataset.harness is not None:
        spec = harness_spec(dataset, harness, named)
        factory, named = spec.factory, dict(spec.params)
    where = (base_dir or home) if harness is not None else home
    found = [] if dataset.path is None else [Path(dataset.path)]
    if isinstance(factory, str):
        found.append(resolve_from(factory.rpartition(":")[0], where))
    found += [resolve_from(v, home) for v in named.values() if isinstance(v, str) and v]
    cassette = default_cassette(dataset, named)
    stem = dataset.path.stem if dataset.path is not None else "dataset"
    proxied = dataset.proxy.get("cassette") or f"cassettes/{stem}.proxy.yaml"
    found += [cassette, judge_cassette(cassette), resolve_from(str(proxied), home)]
    return [path for path in found if _is_file(path)]


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a param that is no path (too long, a NUL byte)
        return False


def judge_cassette(cassette: Path) -> Path:
    """The judge's cassette: the harness cassette with ``.judge`` before its extension."""
    return cassette.with_name(f"{cassette.stem}.judge{cassette.suffix or '.yaml'}")


def _declares(factory: Any, name: str) -> bool:
    """Whether the factory names ``name`` as a parameter (``**kwargs`` does not count: a
    harness must never receive options it did not ask for)."""
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def harness_spec(
    dataset: EvalDataset, harness: HarnessSpec | str | None, params: Mapping[str, Any]
) -> HarnessSpec:
    """The entry point and params a run resolves (what a Ray actor resolves too):
    ``harness`` (an entry point, with no params of its own, or a spec), else the
    dataset's; ``params`` merged over the spec's."""
    spec = HarnessSpec(harness, {}) if isinstance(harness, str) else harness or dataset.harness
    if spec is None:
        raise InputError(
            f"{dataset.path}: the dataset names no harness: add 'harness: pkg.module:factory' "
            "to it, or pass --harness, or evaluate recorded traces with --traces DIR"
        )
    return HarnessSpec(spec.factory, {**spec.params, **params})


def build_harness(
    dataset: EvalDataset,
    harness: HarnessSpec | str | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    base_dir: Path | None = None,
) -> Harness:
    """The harness a run of ``dataset`` runs: :func:`harness_spec`, resolved. Relative
    ``file.py:attr`` entry points resolve against ``base_dir`` when given (a matrix
    file's folder), else against the dataset's own directory."""
    return _with_spec(resolve_harness, dataset, harness, params, base_dir)  # type: ignore[no-any-return]


def check_harness_of(
    dataset: EvalDataset,
    harness: HarnessSpec | str | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    base_dir: Path | None = None,
) -> None:
    """What ``validate`` checks of the harness :func:`build_harness` would build, without
    building it (:func:`~signal_eval_cli.harness.entrypoints.check_harness`)."""
    _with_spec(check_harness, dataset, harness, params, base_dir)


def _with_spec(
    call: Callable[..., Any],
    dataset: EvalDataset,
    harness: HarnessSpec | str | None,
    params: Mapping[str, Any] | None,
    base_dir: Path | None,
) -> Any:
    """``call`` (resolve or check) on :func:`harness_spec`'s factory and params, with
    relative entry points against ``base_dir``, else the dataset's directory."""
    spec = harness_spec(dataset, harness, params or {})
    return call(
        spec.factory,
        dict(spec.params),
        base_dir=base_dir,
        dataset_path=dataset.path if base_dir is None else None,
    )


@dataclass
class ProviderPolicy:
    """What a run asks of its model calls (``signal-eval run``'s provider options)."""

    provider: str | None = None
    record: bool = False
    record_missing: bool = False
    replay: bool = False
    max_connections: int | None = None
    judge_model: str | None = None
    prices: list[str] = field(default_factory=list)
    """``MODEL=INPUT:OUTPUT`` in USD per 1M tokens."""
    live: bool = False
    note: Note = field(default=_stderr, repr=False, compare=False, kw_only=True)
    """Where what the user must know goes (a replay they may not expect, what was
    recorded where): stderr unless said otherwise."""

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
        if (
            not isinstance(provider, str)
            or provider == "cassette"
            or provider.startswith("cassette:")
        ):
            if mode in ("record", "record-missing", "live"):
                raise InputError(
                    f"--{mode} needs a real provider: pass --provider openai:<model> or "
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
            self.note(f"replaying {cassette} (recorded calls; use --record to call {provider})")
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
        cassette = judge_cassette(default_cassette(dataset, merged))
        mode = self.mode
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
        """The price table with the ``prices`` overrides."""
        from signal_eval_cli.providers.pricing import default_prices

        return default_prices().with_overrides(self._options().get("prices"))

    def start_proxy(self, dataset: EvalDataset, options: RunOptions) -> None:
        """Start the run's model proxy (``options.proxy``): the harness's own calls are
        replayed, recorded or passed through, and traced, whichever harness it is."""
        options.proxy = self.proxy(dataset).start()

    def finish(self, options: RunOptions) -> None:
        """Save every recording (saying where it went), stop the proxy and the judge."""
        recording = sys.modules.get("signal_eval_cli.providers.recording")
        for saved in recording.save_all() if recording is not None else ():  # none made else
            self.note(f"recorded {saved.recorded} call(s) to {saved.path}")
        if options.proxy is not None:
            stop_proxy(options.proxy, self.note)
        close = getattr(options.judge, "close", None)
        if callable(close):
            close()


def stop_proxy(proxy: ModelProxy, note: Note = _stderr) -> None:
    """Stop ``proxy`` and write what it recorded, saying where it went and what it lacked."""
    proxy.stop()
    for path in proxy.save():
        note(f"recorded the harness's model calls to {path}")
    if proxy.misses:
        note(
            f"{len(proxy.misses)} model call(s) had no recording in "
            f"{proxy.cassette.path if proxy.cassette else 'the cassette'}"
        )
    for failure in proxy.failures[:5]:
        note(f"not recorded: {failure}")


def load_datasets(
    paths: Sequence[Path],
    options: RunOptions,
    *,
    harness: str | None = None,
    params: Mapping[str, Any] | None = None,
    policy: ProviderPolicy | None = None,
    traces: bool = False,
    note: Note = _stderr,
) -> list[EvalDataset | None]:
    """Every dataset a run names, loaded and checked before any case runs, with every
    problem at once (:class:`InputError`): the harness must load (``harness`` or each
    dataset's, with ``params`` and the policy's provider and recording; not for recorded
    ``traces``, which run none), and the filters of ``options`` must select some case.
    Of several datasets, one the filters select nothing from is ``None`` (and ``note``
    says so) when another has cases."""
    given = dict(params or {})
    if traces and (harness is not None or given):
        unused = [o for o, v in (("--harness", harness is not None), ("--param", given)) if v]
        raise InputError(
            f"{' and '.join(unused)} with --traces: recorded traces run no harness "
            f"(leave {'them' if len(unused) > 1 else 'it'} out)"
        )
    policy = policy or ProviderPolicy()
    provider, recording = policy.provider, policy.record or policy.record_missing

    def load(path: Path) -> EvalDataset:
        doc = dataset_document(path)
        if traces:  # recorded traces: the harness is not run
            return runnable_dataset(doc)
        if harness is None:
            return check_dataset(doc, given, provider, recording)
        dataset = runnable_dataset(doc)  # --harness replaces the one the dataset names
        check_harness(harness, given, dataset_path=path, provider=provider, recording=recording)
        return dataset

    datasets: list[EvalDataset | None] = list(each_or_every_problem(paths, load))
    loaded = [d for d in datasets if d is not None]
    if len(loaded) == 1:
        check_filters(loaded[0], options)  # a typo'd --case/--tag must not run nothing
        return datasets
    errors = []
    for dataset in loaded:
        try:
            check_filters(dataset, options)
        except InputError as exc:
            errors.append(exc)
    if len(errors) == len(loaded):  # no dataset has a case the filters select
        raise InputError([p for e in errors for p in e.problems])
    kept: list[EvalDataset | None] = []
    for dataset in loaded:
        if select_cases(dataset, options):
            kept.append(dataset)
        else:
            note(f"{dataset.path}: no case selected by the filters: not run")
            kept.append(None)
    return kept


@dataclass
class PreparedRun:
    """A run of a dataset, configured: the harness to run, the spec a Ray actor builds
    it from (``None`` for recorded traces) and the params the factory was given."""

    harness: Harness
    spec: HarnessSpec | None
    params: dict[str, Any]


def prepare_run(
    dataset: EvalDataset,
    policy: ProviderPolicy,
    options: RunOptions,
    *,
    harness: str | None = None,
    params: Mapping[str, Any] | None = None,
    traces: Path | None = None,
    export_env: bool = True,
) -> PreparedRun:
    """Build the harness (or read the recorded ``traces`` DIR/<case-id>.jsonl), set up
    the judge and start the model proxy into ``options``; ``export_env`` points this
    process's SDK base URLs at it too (not for a run on Ray: each actor has its own).
    On bad input (``InputError``) the proxy is stopped before the error goes on."""
    given = dict(params or {})
    try:
        if traces is not None:
            from signal_eval_cli.harness.recorded import RecordedTraces

            ids = [c.id for c in select_cases(dataset, options) if not c.skip]
            recorded = RecordedTraces(traces, ids)
            policy.configure_judge(dataset, options, given)
            return PreparedRun(recorded, None, given)
        chosen = policy.harness_params(dataset, harness, given)
        subject = build_harness(dataset, harness, chosen)
        spec = harness_spec(dataset, harness, chosen)
        policy.configure_judge(dataset, options, chosen)
        if wants_proxy(subject):
            policy.start_proxy(dataset, options)
        if export_env and options.proxy is not None:
            options.proxy.export_env(options.concurrency if options.parallel else 1)
        return PreparedRun(subject, spec, chosen)
    except InputError:
        if options.proxy is not None:
            options.proxy.stop()  # its port and the environment it pointed here
        raise
