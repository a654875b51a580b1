"""The Ray executor: a run's units (a dataset's or a matrix's cases, scenarios) run on a
Ray cluster.

Each actor is a Ray *async actor* holding a :class:`Job` (for cases: the existing asyncio
runner, :func:`~signal_eval_cli.runner.run_dataset_case`) with its own concurrency limit. The
driver keeps every actor fed: it sends batches of units as the actor's slots free up (at
most one batch beyond its concurrency, so an actor never idles waiting for the driver),
and each batch's results come back (and go to ``on_case_complete``: the journal) as soon
as the batch is done. An actor (or its node) that dies has its in-flight batches sent to a
fresh actor, one unit at a time and alone on it (so the unit that kills its worker is
told from the bystanders); a result is accepted once per unit, so no unit is lost or
counted twice. A unit that kills the worker it runs alone on ``max_attempts`` times is
reported errored, not retried forever.

The run's model proxy and LLM judge travel with the job as copies (see
:class:`~signal_eval_cli.proxy.server.ModelProxy` and
:class:`~signal_eval_cli.judges.LLMJudge`): each actor serves its cases from its own proxy
and judge, with the cassettes' recordings shipped to it, and hands back, with each case's
result, what it recorded; the driver keeps that once per case (a case run again after its
worker died is kept from the run that finished) and the run saves its cassettes once.
The job is pickled once, before Ray starts: a part of it that cannot travel (a library
judge holding a lock) is bad input, named, before anything runs.

Ray is imported only here, and only when a run asks for it (extra ``[ray]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.proxy.recorder import Handover
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.runner import RunOptions, dataset_result, not_run, select_cases
from signal_eval_cli.signals import now_iso

__all__ = [
    "DIED",
    "CaseOutcome",
    "Job",
    "RaySettings",
    "VariantSpec",
    "run_dataset_ray",
    "run_matrix_ray",
    "run_units_ray",
]

Unit = tuple[str, int]
"""(variant id, index of the case in the selected cases)."""


@dataclass(slots=True)
class RaySettings:
    address: str | None = None
    """A running cluster (``ray://host:10001``, ``host:6379``, ``auto``); None starts a local one."""
    actors: int | None = None
    """How many actors; default: one per CPU the cluster has (at least 1)."""
    concurrency: int = 4
    """Cases each actor runs at once."""
    batch: int | None = None
    """Units per call to an actor; default ``concurrency // 2`` (at least 1)."""
    max_attempts: int = 3
    """Times a unit may kill the worker it runs alone on before it is reported errored.
    Units in flight on a worker that dies run again one at a time, each alone on an actor,
    so only the one that kills it is blamed."""
    on_actors: Callable[[list[Any]], None] | None = None
    """Called with the actor handles once they are up (tests kill one)."""


@dataclass(slots=True)
class VariantSpec:
    """How an actor builds a harness: an entry point, params, and where files resolve;
    or the harness itself, when it is data that travels (recorded traces)."""

    factory: str
    params: dict[str, Any] = field(default_factory=dict)
    base_dir: Path | None = None
    built: Any = None
    """A harness sent to the actors as it is (pickled), in place of the entry point's:
    :class:`~signal_eval_cli.harness.recorded.RecordedTraces` carries its traces along."""

    def build(self) -> Any:
        from signal_eval_cli.harness.entrypoints import resolve_harness

        if self.built is not None:
            return self.built
        return resolve_harness(self.factory, dict(self.params), base_dir=self.base_dir)


class Job(Protocol):
    """What every actor receives once (pickled): the work, and how to run a batch of it.
    The driver never calls :meth:`prepare` or :meth:`run`; an actor never calls :meth:`died`."""

    def prepare(self) -> None:
        """On the actor, once, before any batch (build harnesses, unpack fixtures)."""

    async def run(
        self, variant: str, indices: list[int], semaphore: asyncio.Semaphore, concurrency: int
    ) -> list[Any]:
        """The results of the units ``(variant, i)``, in order; at most ``concurrency`` at
        once per call, and the actor's ``semaphore`` across calls."""
        ...

    def died(self, variant: str, index: int) -> Any:
        """The result of a unit whose worker died every time it was tried."""
        ...


@dataclass(slots=True)
class CaseOutcome:
    """A case's result as an actor sends it back (as JSON: cheaper for Ray to send than
    the result objects, as measured with bench/ray.py), with what its proxy and judge
    recorded."""

    row: dict[str, Any]
    proxied: Handover | None = None
    recorded: dict[Path, list[Handover]] = field(default_factory=dict)
    """What the actor's recorders (the judge's, a harness's provider's) recorded since its
    last batch, by cassette (with any one case of the batch)."""


@dataclass(slots=True)
class _CasesJob:
    """A dataset's (or a matrix's) cases and the harnesses (entry points) that run them,
    with the run's proxy and judge (copies on the actors)."""

    dataset: EvalDataset
    cases: list[Any]
    variants: dict[str, VariantSpec]
    options: RunOptions
    harnesses: dict[str, Any] = field(default_factory=dict)

    def prepare(self) -> None:
        from signal_eval_cli.harness.threads import HarnessThreads
        from signal_eval_cli.providers.recording import hand_over

        hand_over()  # the harnesses' recorders: the driver's write the cassettes
        self.harnesses = {vid: spec.build() for vid, spec in self.variants.items()}
        self.options = dataclasses.replace(self.options, executor=HarnessThreads())
        proxy = self.options.proxy
        concurrency = self.options.concurrency if self.options.parallel else 1
        if proxy is not None:  # clients made without ctx reach it too, as locally
            proxy.start().export_env(concurrency)
        proxies = getattr(self.options, "proxies", {})  # a matrix's, one per variant
        if proxies:
            from signal_eval_cli.matrix_run import export_variants_env

            for each in proxies.values():
                each.start()
            export_variants_env(proxies, concurrency)

    def _options(self, variant: str) -> RunOptions:
        """The options a variant's cases run with: its own proxy, in a matrix."""
        proxy = getattr(self.options, "proxies", {}).get(variant)
        return self.options if proxy is None else dataclasses.replace(self.options, proxy=proxy)

    async def run(
        self, variant: str, indices: list[int], semaphore: asyncio.Semaphore, concurrency: int
    ) -> list[CaseOutcome]:
        from signal_eval_cli.runner import run_dataset_case

        harness, dataset, options = self.harnesses[variant], self.dataset, self._options(variant)

        async def one(index: int) -> CaseResult:
            async with semaphore:  # the actor's concurrency, across its batches
                return await run_dataset_case(harness, dataset, self.cases[index], options)

        # The cases themselves, not a run_dataset of the batch: no per-batch worker pool,
        # selection or dataset result.
        results = await asyncio.gather(*(one(i) for i in indices))
        from signal_eval_cli.providers.recording import take_handed

        proxy = options.proxy
        handed = proxy.take([r.case_id for r in results]) if proxy is not None else {}
        outcomes = [CaseOutcome(r.to_dict("all"), handed.get(r.case_id)) for r in results]
        if outcomes:
            outcomes[0].recorded = take_handed([r.case_id for r in results])
        return outcomes

    def died(self, variant: str, index: int) -> CaseOutcome:
        case = self.cases[index]
        return CaseOutcome(
            CaseResult(
                case.id, passed=False, name=case.name, error=DIED, tags=list(case.tags)
            ).to_dict("all")
        )

    def keep(self, outcome: CaseOutcome, variant: str = "") -> CaseResult:
        """On the driver, once per case: its result; the run's (the variant's) proxy and
        recorders keep what it recorded."""
        from signal_eval_cli.providers.recording import absorb_handed

        proxy = self._options(variant).proxy
        if outcome.proxied is not None and proxy is not None:
            proxy.absorb(outcome.proxied)
        if outcome.recorded:
            absorb_handed(outcome.recorded)
        return CaseResult.from_dict(outcome.row)


DIED = "the Ray worker running it died every time it was tried"


def import_ray() -> Any:
    """``ray``, or an input error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(
            "--executor ray needs Ray: pip install 'signal-eval[ray]' (or pip install ray)"
        ) from None
    return ray


def _ensure_ray(ray: Any, address: str | None) -> None:
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, log_to_driver=True, logging_level="warning")
        else:
            ray.init(include_dashboard=False, logging_level="warning", _node_ip_address="127.0.0.1")
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise InputError(f"--ray-address {address or '(local)'}: cannot connect: {exc}") from None


def _check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """An input error, now, when nothing listens at ``host:port`` (``ray.init`` would retry
    for minutes). ``auto`` and addresses without a port are left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise InputError(
            f"--ray-address {address}: cannot connect: {exc.strerror or exc} "
            "(start a cluster with 'ray start --head', or leave --ray-address out for a local one)"
        ) from None


class _Worker:
    """Body of the actor (wrapped with ``ray.remote`` lazily): the job, prepared once, and
    one semaphore for all its calls (its concurrency)."""

    def __init__(self, payload: bytes, concurrency: int) -> None:
        from ray import cloudpickle

        job: Job = cloudpickle.loads(payload)
        job.prepare()
        self.job = job
        self.concurrency = concurrency
        self.semaphore: asyncio.Semaphore | None = None

    def pid(self) -> int:
        return os.getpid()

    async def run(self, variant: str, indices: list[int]) -> list[Any]:
        if self.semaphore is None:  # made on the actor's own event loop
            self.semaphore = asyncio.Semaphore(self.concurrency)
        return await self.job.run(variant, indices, self.semaphore, self.concurrency)


@dataclass(slots=True)
class _Call:
    """A batch in flight: which actor (the handle itself: a slot's actor changes when one
    dies), and which units."""

    slot: int
    actor: Any
    variant: str
    indices: list[int]
    alone: bool = False
    """A suspect running by itself: if the actor dies, this unit killed it."""


async def run_units_ray(
    job: Job,
    units: Sequence[Unit],
    settings: RaySettings,
    on_result: Callable[[Unit, Any], bool],
) -> None:
    """Run ``units`` on Ray actors; ``on_result`` gets each unit's result exactly once
    and returns False to stop feeding new work (fail-fast)."""
    ray = import_ray()
    # Pickled before Ray starts: what cannot travel is bad input, said at once.
    payload = _pickled(job, ray.cloudpickle.dumps)
    _ensure_ray(ray, settings.address)
    concurrency = max(1, settings.concurrency)
    batch = max(1, settings.batch or concurrency // 2)
    count = settings.actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    # No CPU reserved (asking for more actors than CPUs must not hang), spread over nodes.
    worker_class = ray.remote(num_cpus=0, scheduling_strategy="SPREAD")(_Worker)
    job_ref = ray.put(payload)

    def spawn() -> Any:
        return worker_class.options(max_concurrency=concurrency + 2, max_restarts=0).remote(
            job_ref, concurrency
        )

    actors = [spawn() for _ in range(count)]
    try:  # up before the clock matters; a harness that cannot load on a worker stops here
        await asyncio.gather(*(a.pid.remote() for a in actors))
    except ray.exceptions.RayError as exc:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        raise InputError(f"--executor ray: the actors could not start: {_reason(exc)}") from None
    if settings.on_actors is not None:
        settings.on_actors(list(actors))
    queue = deque(_batches(units, batch))
    suspects: deque[Unit] = deque()
    """Units that were in flight on a worker that died: each runs alone on an actor."""
    load = [0] * count
    alone: set[int] = set()
    """Slots running one suspect and nothing else."""
    attempts: dict[Unit, int] = {}
    done: set[Unit] = set()
    pending: dict[asyncio.Future[Any], _Call] = {}
    feeding = True

    def send(slot: int, variant: str, indices: list[int], by_itself: bool = False) -> None:
        actor = actors[slot]
        ref = actor.run.remote(variant, indices)
        call = _Call(slot, actor, variant, indices, by_itself)
        pending[asyncio.wrap_future(ref.future())] = call
        load[slot] += len(indices)
        if by_itself:
            alone.add(slot)

    def feed() -> None:
        if not feeding:
            return
        drain = None
        for slot in range(count):
            if suspects and load[slot] == 0:
                variant, index = suspects.popleft()
                send(slot, variant, [index], by_itself=True)
        if suspects:  # the least loaded actor takes no new batch: it drains for the next one
            drain = min(
                (s for s in range(count) if s not in alone), key=load.__getitem__, default=None
            )
        # An actor holds at most one batch beyond its concurrency: it never idles waiting
        # for the driver, and no actor hoards the queue.
        for slot in sorted(range(count), key=load.__getitem__):
            if slot in alone or slot == drain:
                continue
            while queue and load[slot] + len(queue[0][1]) <= concurrency + batch:
                send(slot, *queue.popleft())

    def accept(unit: Unit, row: Any) -> None:
        nonlocal feeding
        if unit not in done:  # never twice
            done.add(unit)
            feeding &= on_result(unit, row)

    def died(call: _Call) -> None:
        """A worker died with ``call`` in flight: blame a unit only when it ran alone."""
        if actors[call.slot] is call.actor:  # its other batches fail too: replace it once
            with contextlib.suppress(Exception):  # already gone
                ray.kill(call.actor, no_restart=True)
            actors[call.slot] = spawn()
        units = [(call.variant, index) for index in call.indices]
        if not call.alone:
            suspects.extend(units)
            return
        (unit,) = units
        attempts[unit] = attempts.get(unit, 0) + 1
        if attempts[unit] < settings.max_attempts:
            suspects.appendleft(unit)
        else:
            accept(unit, job.died(*unit))

    try:
        feed()
        while pending:
            finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                call = pending.pop(future)
                load[call.slot] -= len(call.indices)
                alone.discard(call.slot)
                try:
                    rows = future.result()
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
                    died(call)
                    continue
                for index, row in zip(call.indices, rows, strict=True):
                    accept((call.variant, index), row)
            feed()
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)


def _pickled(job: Job, dumps: Callable[[Any], bytes]) -> bytes:
    """``job`` as the actors receive it, or an input error naming the part of it that
    cannot be pickled (a judge object holding a lock or a client, a harness object)."""
    try:
        return dumps(job)
    except Exception as exc:  # pickling raises TypeError, PicklingError, AttributeError…
        where, part, why = _unpicklable(dumps, job, "", exc)
        raise InputError(
            f"--executor ray: {where} ({type(part).__module__}.{type(part).__qualname__}) "
            f"cannot be sent to the actors: {why}. Every actor gets a pickled copy of the "
            "run: make it picklable (say, a __reduce__ that builds it again from its "
            "settings on the actor, as signal_eval_cli.judges.LLMJudge does), give a "
            "harness by its entry point, or use the local executor"
        ) from None


def _unpicklable(
    dumps: Callable[[Any], bytes], value: Any, name: str, exc: BaseException
) -> tuple[str, Any, BaseException]:
    """The innermost field (of dataclasses, of mappings) of ``value`` that does not
    pickle: its dotted name, itself, and why."""
    parts: Any = ()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    elif isinstance(value, Mapping):
        parts = value.items()
    for key, part in parts:
        try:
            dumps(part)
        except Exception as inner:
            return _unpicklable(dumps, part, f"{name}.{key}" if name else str(key), inner)
    return name or type(value).__name__, value, exc


def _batches(units: Sequence[Unit], size: int) -> list[tuple[str, list[int]]]:
    """``units`` as batches of one variant each, at most ``size`` units, in order."""
    by_variant: dict[str, list[int]] = {}
    for variant, index in units:
        by_variant.setdefault(variant, []).append(index)
    return [
        (variant, indices[start : start + size])
        for variant, indices in by_variant.items()
        for start in range(0, len(indices), size)
    ]


def _reason(exc: BaseException) -> str:
    """The last line of a Ray error (its cause), not the whole remote traceback."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def make_job(
    dataset: EvalDataset, variants: Mapping[str, VariantSpec], options: RunOptions
) -> tuple[_CasesJob, list[Any]]:
    """The job the actors receive (its proxy and judge are this run's: copies travel),
    and the selected cases (the units' indices point here)."""
    cases = select_cases(dataset, options)
    plain = dataclasses.replace(
        options,
        on_case_complete=None,
        semaphore=None,
        executor=None,
        finished={},
        tags=(),
        case_ids=(),
        shard=None,
        fail_fast=False,  # the driver stops feeding; a batch runs whole
    )
    return _CasesJob(dataset, cases, dict(variants), plain), cases


async def run_dataset_ray(
    dataset: EvalDataset,
    harness: VariantSpec,
    options: RunOptions,
    settings: RaySettings,
) -> DatasetResult:
    """:func:`~signal_eval_cli.runner.run_dataset` on Ray: the same result, minus timings."""
    started_at, started = now_iso(), time.perf_counter()
    job, cases = make_job(dataset, {"": harness}, options)
    results: list[CaseResult | None] = [options.finished.get(c.id) for c in cases]
    units = [("", i) for i, r in enumerate(results) if r is None]

    def accept(unit: Unit, outcome: CaseOutcome) -> bool:
        results[unit[1]] = result = job.keep(outcome)
        if options.on_case_complete is not None:
            options.on_case_complete(result)
        return not (options.fail_fast and not result.passed and not result.skipped)

    await run_units_ray(job, units, settings, accept)
    return dataset_result(dataset, cases, results, options, started_at, started)


def variant_spec(variant: Any, dataset: EvalDataset) -> VariantSpec:
    """What an actor needs to build a matrix variant's harness (its entry point)."""
    from signal_eval_cli.dataset import HarnessSpec

    spec, base_dir = variant.harness, variant.base_dir
    if spec is None:
        spec, base_dir = dataset.harness, dataset.path.parent if dataset.path else None
    base_dir = base_dir.resolve() if base_dir is not None else None  # actors run elsewhere
    if isinstance(spec, str):
        spec = HarnessSpec(spec)
    if not isinstance(spec, HarnessSpec):
        raise InputError(
            f"variant '{variant.id}': --executor ray needs an entry point, not a harness object"
        )
    return VariantSpec(spec.factory, {**spec.params, **variant.params}, base_dir)


async def run_matrix_ray(
    variants: Sequence[Any],
    dataset: EvalDataset,
    options: Any,
    settings: RaySettings,
    *,
    name: str | None = None,
) -> Any:
    """:func:`~signal_eval_cli.matrix.run_matrix` on Ray: every variant's cases share the
    actors (each actor holds every variant's harness)."""
    from signal_eval_cli.matrix_model import MatrixResult, VariantResult

    started_at, started = now_iso(), time.perf_counter()
    for v in variants:  # resolvable here first: a typo fails before anything runs
        v.build(dataset)
    specs = {v.id: variant_spec(v, dataset) for v in variants}
    # the driver's callbacks stay here (they hold its console); each variant's proxy travels
    on_driver: dict[str, Any] = {
        "on_variant_complete": None,
        "on_variant_case": None,
        "finished_by_variant": {},
    }
    plain = dataclasses.replace(
        options, **{k: v for k, v in on_driver.items() if hasattr(options, k)}
    )
    job, cases = make_job(dataset, specs, plain)
    finished_by_variant = getattr(options, "finished_by_variant", {})
    on_case = getattr(options, "on_variant_case", None)
    results = {v.id: [finished_by_variant.get(v.id, {}).get(c.id) for c in cases] for v in variants}
    units = [(vid, i) for vid, rows in results.items() for i, r in enumerate(rows) if r is None]

    def accept(unit: Unit, outcome: CaseOutcome) -> bool:
        results[unit[0]][unit[1]] = result = job.keep(outcome, unit[0])
        if on_case is not None:
            on_case(unit[0], result)
        if options.on_case_complete is not None:
            options.on_case_complete(result)
        return not (options.fail_fast and not result.passed and not result.skipped)

    await run_units_ray(job, units, settings, accept)

    done = []
    for v in variants:
        rows = [
            r if r is not None else not_run(c) for r, c in zip(results[v.id], cases, strict=True)
        ]
        result = DatasetResult(dataset.name, rows, metadata=dict(dataset.metadata))
        variant = VariantResult(v.id, v.name, result, dict(v.metadata))
        done.append(variant)
        if getattr(options, "on_variant_complete", None) is not None:
            options.on_variant_complete(variant)
    return MatrixResult.of(
        name or dataset.name,
        done,
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )
