"""Running a matrix: every variant over one dataset under one concurrency limit.

All variants run at once under ONE concurrency limit, so ``--concurrency 4`` means
four cases in flight in total, not four per variant.

Each variant's harness has its own model proxy and cassette,
``cassettes/<matrix file stem>.<variant id>.proxy.yaml`` beside the matrix file
(:func:`variant_cassette`): two variants run the same case at once with different
prompts or models, so their recordings must never meet.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.dataset import EvalDataset, HarnessSpec
from signal_eval_cli.errors import InputError, Problem, each_or_every_problem
from signal_eval_cli.matrix_model import MatrixResult, VariantResult
from signal_eval_cli.results import CaseResult
from signal_eval_cli.run_config import build_harness, check_harness_of
from signal_eval_cli.runner import RunOptions, run_dataset
from signal_eval_cli.signals import now_iso

if TYPE_CHECKING:
    from signal_eval_cli.proxy.cassette import ProxyCassette
    from signal_eval_cli.proxy.server import ModelProxy

__all__ = [
    "BARE_CLIENT",
    "MatrixOptions",
    "Variant",
    "built_variants",
    "check_cassette_names",
    "export_variants_env",
    "run_matrix",
    "variant_cassette",
]


@dataclass(slots=True)
class Variant:
    """One way of running the dataset.

    ``harness`` is an entry-point string or :class:`HarnessSpec` (resolved with
    ``params`` merged over the spec's params), a ready harness object, or ``None``
    for the dataset's own harness.
    """

    id: str
    name: str
    harness: HarnessSpec | str | Any = None
    params: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    base_dir: Path | None = None
    """Where relative ``file.py:attr`` entry points resolve (the matrix file's folder)."""
    where: Problem | None = None
    """Its place in the matrix file (its ``harness``, else ``params``, else the variant):
    where a problem building its harness is reported when the problem has no place."""

    def build(self, dataset: EvalDataset) -> Any:
        """The harness to run: resolve the entry point (as every run does,
        :func:`~signal_eval_cli.run_config.build_harness`), or use the object given."""
        spec = self.harness
        if spec is not None and not isinstance(spec, (str, HarnessSpec)):
            return spec
        return self._resolving(dataset, build_harness)

    def check(self, dataset: EvalDataset) -> None:
        """What ``validate`` checks of the harness :meth:`build` builds, without building
        it (:func:`~signal_eval_cli.run_config.check_harness_of`), located the same way."""
        if self.harness is None or isinstance(self.harness, (str, HarnessSpec)):
            self._resolving(dataset, check_harness_of)

    def _resolving(self, dataset: EvalDataset, resolve: Callable[..., Any]) -> Any:
        spec = self.harness
        if spec is None and dataset.harness is None:
            raise InputError(
                f"variant '{self.id}' names no harness and dataset '{dataset.name}' has none"
            )
        base_dir = self.base_dir if spec is not None else None  # else the dataset's (paths.py)
        try:
            return resolve(dataset, spec, self.params, base_dir=base_dir)
        except InputError as exc:
            raise InputError([self._located(p) for p in exc.problems]) from None

    def _located(self, problem: Problem) -> Problem:
        if problem.line > 0 or self.where is None:
            return replace(problem, message=f"variant '{self.id}': {problem.message}")
        return replace(self.where, message=f"variant '{self.id}': {problem}")


@dataclass
class MatrixOptions(RunOptions):
    """:class:`RunOptions` plus a callback after each variant, one after each case that
    says its variant, each variant's cases already finished (a resumed journal), and
    each variant's model proxy (started; else ``proxy``, if any, serves them all)."""

    on_variant_complete: Callable[[VariantResult], None] | None = None
    on_variant_case: Callable[[str, CaseResult], None] | None = None
    finished_by_variant: Mapping[str, Mapping[str, CaseResult]] = field(default_factory=dict)
    proxies: Mapping[str, ModelProxy] = field(default_factory=dict)


def variant_cassette(
    matrix_path: Path, variant_id: str, *, per_case: bool = False
) -> ProxyCassette:
    """Where a variant's proxied model calls are recorded: beside the matrix file,
    ``cassettes/<stem>.<variant id>.proxy.yaml`` (``.proxy/`` of per-case files)."""
    from signal_eval_cli.proxy.cassette import ProxyCassette

    name = f"{matrix_path.stem}.{_file_safe(variant_id)}.proxy"
    return ProxyCassette(
        matrix_path.parent / "cassettes" / (name if per_case else f"{name}.yaml"),
        per_case=per_case,
    )


def _file_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def built_variants(variants: Sequence[Variant], dataset: EvalDataset) -> list[Variant]:
    """The variants with their harnesses built (ready objects), each failure a located
    :class:`InputError`. A local run builds them before any model proxy points this
    process's environment at itself: a provider reads ``OPENAI_BASE_URL`` when it is made."""
    return each_or_every_problem(variants, lambda v: replace(v, harness=v.build(dataset)))


def check_cassette_names(ids: Sequence[str]) -> None:
    """Two variant ids that make the same cassette name would share recordings."""
    seen: dict[str, str] = {}
    for vid in ids:
        other = seen.setdefault(_file_safe(vid), vid)
        if other != vid:
            raise InputError(
                f"variants '{other}' and '{vid}' would share the cassette of "
                f"'{_file_safe(vid)}': give them ids that differ in letters, digits, '.', '_' or '-'"
            )


BARE_CLIENT = (
    "in a matrix each variant's model calls are recorded apart, and a client that only reads "
    "OPENAI_BASE_URL / ANTHROPIC_BASE_URL says neither its variant nor its case: make it "
    "with ctx.openai() / ctx.anthropic() (or give it ctx.proxy's base URLs; a subprocess "
    "ctx.proxy.env)"
)


def export_variants_env(proxies: Mapping[str, ModelProxy], concurrency: int) -> None:
    """Point this process's ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` at a proxy until
    it stops, so an SDK client made without ``ctx`` never goes live: with one variant as
    in ``run``; with more, every such call is refused saying what to do (it could be
    any variant's)."""
    first = next(iter(proxies.values()), None)
    if first is None:
        return
    if len(proxies) > 1:
        first.bare_refusal = BARE_CLIENT
    first.export_env(concurrency)


async def run_matrix(
    variants: Sequence[Variant],
    dataset: EvalDataset,
    options: MatrixOptions | RunOptions | None = None,
    *,
    name: str | None = None,
) -> MatrixResult:
    """Run every variant over the dataset under one shared concurrency limit.

    Harnesses are all resolved before anything runs, so a typo in the last variant's
    entry point fails fast (``InputError``) instead of after the first variants ran.
    """
    options = options or MatrixOptions()
    ids = [v.id for v in variants]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputError(f"duplicate variant ids: {', '.join(duplicates)}")
    harnesses = [v.build(dataset) for v in variants]
    limit = options.concurrency if options.parallel else 1
    shared = dataclasses.replace(
        options, semaphore=options.semaphore or asyncio.Semaphore(max(1, limit))
    )
    on_variant = getattr(options, "on_variant_complete", None)
    on_case = getattr(options, "on_variant_case", None)
    finished = getattr(options, "finished_by_variant", {})
    started_at, started = now_iso(), time.perf_counter()
    matrix_name = name or dataset.name

    proxies = getattr(options, "proxies", {})

    def variant_options(variant_id: str) -> RunOptions:
        own = dataclasses.replace(
            shared,
            finished=finished.get(variant_id, {}),
            proxy=proxies.get(variant_id, shared.proxy),
        )
        then = shared.on_case_complete
        if on_case is not None:

            def complete(result: CaseResult) -> None:
                on_case(variant_id, result)
                if then is not None:
                    then(result)

            own.on_case_complete = complete
        return own

    async def one(variant: Variant, harness: Any) -> VariantResult:
        result = await run_dataset(harness, dataset, variant_options(variant.id))
        result.name = matrix_name  # as a journal rebuilds it, and scenario matrices
        done = VariantResult(variant.id, variant.name, result, dict(variant.metadata))
        if on_variant is not None:
            on_variant(done)
        return done

    results = await asyncio.gather(*(one(v, h) for v, h in zip(variants, harnesses, strict=True)))
    return MatrixResult.of(
        matrix_name,
        list(results),
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )
