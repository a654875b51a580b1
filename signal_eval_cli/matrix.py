"""Variants × cases: run one dataset against several harness variants and pick one.

A matrix file names a dataset and its variants::

    dataset: code-review.yaml          # relative to the matrix file
    variants:
      - id: detailed
        name: Detailed prompt
        harness: {factory: reactive, params: {cassette: cassettes/detailed.yaml}}
        params: {temperature: 0}       # merged over the harness params
        metadata: {promptVersion: v2.1}

A variant without ``harness`` uses the dataset's. All variants run at once under
ONE concurrency limit, so ``--concurrency 4`` means four cases in flight in
total, not four per variant.

Each variant's harness has its own model proxy and cassette,
``cassettes/<matrix file stem>.<variant id>.proxy.yaml`` beside the matrix file
(:func:`variant_cassette`): two variants run the same case at once with different
prompts or models, so their recordings must never meet.

Ranking uses, per variant, its pass rate (cases that passed all their runs ÷ cases
run), its average cost per case and its p50 latency. Ties are broken by
declaration order, so the same results always give the same answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from signal_eval_cli.compare import pass_rate_stats, wilson_interval
from signal_eval_cli.dataset import EvalDataset, HarnessSpec, load_dataset
from signal_eval_cli.errors import InputError, shorten
from signal_eval_cli.loading import Document, load_document, validate_document
from signal_eval_cli.persistence import register_result_kind
from signal_eval_cli.results import (
    RESULT_SCHEMA_VERSION,
    CaseResult,
    DatasetResult,
    SignalsPolicy,
)
from signal_eval_cli.run_config import build_harness
from signal_eval_cli.runner import RunOptions, run_dataset
from signal_eval_cli.signals import now_iso
from signal_eval_cli.validate import DocumentKind, register_document_kind

if TYPE_CHECKING:
    from signal_eval_cli.proxy.cassette import ProxyCassette
    from signal_eval_cli.proxy.server import ModelProxy
    from signal_eval_cli.scenarios.matrix import ScenarioMatrix

__all__ = [
    "MatrixFile",
    "MatrixOptions",
    "MatrixResult",
    "Variant",
    "VariantComparison",
    "VariantPoint",
    "VariantRecommendation",
    "VariantResult",
    "compare_variants",
    "export_variants_env",
    "load_matrix",
    "pareto_frontier",
    "recommend",
    "run_matrix",
    "variant_cassette",
]

Confidence = Literal["high", "medium", "low"]

MIN_CASES_FOR_CONFIDENCE = 5
"""Below this many cases run per variant, confidence is ``low`` whatever the numbers."""
MATERIAL_DIFFERENCE = 0.10
"""A cost or latency gap counts as real when it exceeds 10 % (compare's default threshold)."""


# -- variants and their results ----------------------------------------------------------------


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

    def build(self, dataset: EvalDataset) -> Any:
        """The harness to run: resolve the entry point (:func:`~signal_eval_cli.run_config.build_harness`),
        or use the object given."""
        spec = self.harness
        if spec is not None and not isinstance(spec, (str, HarnessSpec)):
            return spec
        if spec is None and dataset.harness is None:
            raise InputError(
                f"variant '{self.id}' names no harness and dataset '{dataset.name}' has none"
            )
        base_dir = self.base_dir if spec is not None else None  # else the dataset's (paths.py)
        try:
            return build_harness(dataset, spec, self.params, base_dir=base_dir)
        except InputError as exc:
            raise InputError(
                [replace(p, message=f"variant '{self.id}': {p.message}") for p in exc.problems]
            ) from None


@dataclass(slots=True)
class VariantResult:
    variant_id: str
    variant_name: str
    result: DatasetResult
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        return {
            "variantId": self.variant_id,
            "variantName": self.variant_name,
            "metadata": self.metadata,
            "result": self.result.to_dict(signals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantResult:
        return cls(
            variant_id=str(data["variantId"]),
            variant_name=str(data["variantName"]),
            result=DatasetResult.from_dict(data["result"]),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True, slots=True)
class VariantPoint:
    """A variant as the ranking sees it: pass counts, cost per case, p50 latency."""

    id: str
    passed: int
    ran: int
    cost: float
    latency: float
    """In whole milliseconds, as shown: a sub-millisecond gap is timer noise, never a
    reason to rank one variant above another."""

    @property
    def pass_rate(self) -> float:
        return self.passed / self.ran if self.ran else 0.0

    @classmethod
    def of(cls, variant: VariantResult) -> VariantPoint:
        stats = pass_rate_stats(variant.result.cases)
        agg = variant.result.aggregate_metrics
        return cls(
            variant.variant_id,
            stats.passed_cases,
            stats.cases,
            agg.avg_cost_per_case,
            float(round(agg.p50_latency_ms)),
        )


@dataclass(slots=True)
class VariantComparison:
    by_pass_rate: list[str]
    """Best first."""
    by_cost: list[str]
    """Cheapest first (average cost per case)."""
    by_latency: list[str]
    """Fastest first (p50 latency)."""
    pareto_frontier: list[str]
    """Not dominated on (pass rate ↑, cost ↓, p50 latency ↓); declaration order."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "byPassRate": self.by_pass_rate,
            "byCost": self.by_cost,
            "byLatency": self.by_latency,
            "paretoFrontier": self.pareto_frontier,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantComparison:
        return cls(
            *(
                [str(v) for v in data[key]]
                for key in ("byPassRate", "byCost", "byLatency", "paretoFrontier")
            )
        )


@dataclass(slots=True)
class VariantRecommendation:
    variant_id: str
    reason: str
    confidence: Confidence
    tradeoffs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variantId": self.variant_id,
            "reason": self.reason,
            "tradeoffs": self.tradeoffs,
            "confidence": self.confidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantRecommendation:
        confidence = data["confidence"]
        if confidence not in ("high", "medium", "low"):
            raise ValueError(f"unknown confidence {confidence!r}")
        return cls(
            variant_id=str(data["variantId"]),
            reason=str(data["reason"]),
            confidence=confidence,
            tradeoffs=[str(t) for t in data.get("tradeoffs", [])],
        )


@dataclass(slots=True)
class MatrixResult:
    name: str
    variants: list[VariantResult]
    comparison: VariantComparison
    recommendation: VariantRecommendation | None = None
    duration_ms: float = 0.0
    started_at: str = ""
    completed_at: str = ""
    interrupted: bool = False
    shard: dict[str, Any] | None = None
    """As :attr:`DatasetResult.shard`."""

    kind: ClassVar[str] = "matrix"

    @classmethod
    def of(cls, name: str, variants: list[VariantResult], **kwargs: Any) -> MatrixResult:
        """Rank the variants and recommend one (none from an interrupted run's partial
        results: a variant that ran fewer cases would be judged on other evidence)."""
        points = [VariantPoint.of(v) for v in variants]
        chosen = None if kwargs.get("interrupted") else recommend(points)
        return cls(name, variants, compare_variants(points), chosen, **kwargs)

    def variant(self, variant_id: str) -> VariantResult:
        return next(v for v in self.variants if v.variant_id == variant_id)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "durationMs": round(self.duration_ms, 3),
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "interrupted": self.interrupted,
            **({"shard": self.shard} if self.shard is not None else {}),
            "comparison": self.comparison.to_dict(),
            "recommendation": self.recommendation.to_dict() if self.recommendation else None,
            "variants": [v.to_dict(signals) for v in self.variants],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatrixResult:
        recommendation = data.get("recommendation")
        return cls(
            name=str(data["name"]),
            variants=[VariantResult.from_dict(v) for v in data["variants"]],
            comparison=VariantComparison.from_dict(data["comparison"]),
            recommendation=(
                VariantRecommendation.from_dict(recommendation) if recommendation else None
            ),
            duration_ms=float(data.get("durationMs", 0.0)),
            started_at=str(data.get("startedAt", "")),
            completed_at=str(data.get("completedAt", "")),
            interrupted=bool(data.get("interrupted", False)),
            shard=data.get("shard"),
        )


register_result_kind("matrix", MatrixResult.from_dict)


# -- ranking ------------------------------------------------------------------------------------


def _same(a: float, b: float) -> bool:
    """Equal up to float noise (sums of costs in a different order)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _dominates(a: VariantPoint, b: VariantPoint) -> bool:
    """``a`` is no worse than ``b`` on every axis and better on at least one."""
    axes = (  # (a's value, b's value, higher is better)
        (a.pass_rate, b.pass_rate, True),
        (a.cost, b.cost, False),
        (a.latency, b.latency, False),
    )
    if any(not _same(x, y) and (x < y) == higher for x, y, higher in axes):
        return False
    return any(not _same(x, y) for x, y, _ in axes)


def pareto_frontier(points: Sequence[VariantPoint]) -> list[str]:
    """Ids of the points no other point dominates, in the order given.

    Identical points do not dominate each other, so ties are all on the frontier.
    """
    return [p.id for p in points if not any(_dominates(q, p) for q in points if q is not p)]


def _rank_key(index: int, point: VariantPoint) -> tuple[float, float, float, int]:
    return (-point.pass_rate, point.cost, point.latency, index)


def compare_variants(points: Sequence[VariantPoint]) -> VariantComparison:
    """Orderings by pass rate, cost and latency (ties: declaration order) and the frontier."""
    order = list(enumerate(points))

    def ids(key: Callable[[tuple[int, VariantPoint]], Any]) -> list[str]:
        return [p.id for _, p in sorted(order, key=key)]

    return VariantComparison(
        by_pass_rate=ids(lambda ip: (-ip[1].pass_rate, ip[0])),
        by_cost=ids(lambda ip: (ip[1].cost, ip[0])),
        by_latency=ids(lambda ip: (ip[1].latency, ip[0])),
        pareto_frontier=pareto_frontier(points),
    )


def _gap(mine: float, theirs: float) -> float:
    """How much lower ``mine`` is than ``theirs``, relative to ``theirs`` (0.3 = 30 % lower)."""
    return (theirs - mine) / theirs if theirs > 0 else 0.0


def _tradeoff(chosen: VariantPoint, other: VariantPoint) -> str:
    gains = []
    cheaper, faster = _gap(other.cost, chosen.cost), _gap(other.latency, chosen.latency)
    if cheaper > 0 and not _same(other.cost, chosen.cost):
        gains.append(f"{cheaper:.0%} cheaper")
    if faster > 0 and not _same(other.latency, chosen.latency):
        gains.append(f"{faster:.0%} faster")
    points = (chosen.pass_rate - other.pass_rate) * 100
    lost = (
        f"its pass rate is {points:.0f} points lower ({other.pass_rate:.0%} vs "
        f"{chosen.pass_rate:.0%})"
        if points > 0 and not _same(chosen.pass_rate, other.pass_rate)
        else f"its pass rate is the same ({other.pass_rate:.0%})"
    )
    return f"{other.id} is {' and '.join(gains) or 'no cheaper or faster'} but {lost}"


def recommend(points: Sequence[VariantPoint]) -> VariantRecommendation | None:
    """Recommend the variant to ship: quality first, then cost, then latency.

    The recommended variant has the highest pass rate; among equal pass rates the
    lowest average cost per case, then the lowest p50 latency, then the one declared
    first. It is therefore always on the Pareto frontier. Trade-offs name what every
    other frontier variant would gain (cheaper, faster) and lose (pass rate).

    Confidence, comparing the recommended variant with the runner-up (the next in
    that same order):

    * ``high`` — its pass rate is higher and the two 95 % Wilson intervals of the pass
      rates do not overlap: the quality lead is unlikely to be noise.
    * ``medium`` — its pass rate is higher but the intervals overlap; or the pass rates
      are equal and it is more than 10 % cheaper or faster than the runner-up.
    * ``low`` — anything else: equal pass rates and cost and latency within 10 % (the
      choice is close to arbitrary); fewer than 5 cases ran per variant; or a single
      variant (nothing to compare against).
    """
    if not points:
        return None
    ranked = [p for _, p in sorted(enumerate(points), key=lambda ip: _rank_key(*ip))]
    best = ranked[0]
    frontier = set(pareto_frontier(points))
    tradeoffs = [_tradeoff(best, p) for p in points if p.id in frontier and p is not best]
    if len(ranked) == 1:
        return VariantRecommendation(best.id, "the only variant", "low", tradeoffs)
    runner = ranked[1]
    confidence: Confidence
    if not _same(best.pass_rate, runner.pass_rate):
        best_low, _ = wilson_interval(best.passed, best.ran)
        _, runner_high = wilson_interval(runner.passed, runner.ran)
        confidence = "high" if best_low > runner_high else "medium"
        reason = (
            f"highest pass rate: {best.pass_rate:.0%} ({best.passed}/{best.ran} cases) vs "
            f"{runner.pass_rate:.0%} for {runner.id}"
        )
    else:
        cheaper, faster = _gap(best.cost, runner.cost), _gap(best.latency, runner.latency)
        if cheaper > MATERIAL_DIFFERENCE or faster > MATERIAL_DIFFERENCE:
            confidence = "medium"
        else:
            confidence = "low"
        if not _same(best.cost, runner.cost):
            why = f"cheaper (${best.cost:.4f} vs ${runner.cost:.4f} per case)"
        elif not _same(best.latency, runner.latency):
            why = f"faster (p50 {best.latency:,.0f} ms vs {runner.latency:,.0f} ms)"
        else:
            why = "declared first (same cost and latency)"
        reason = f"ties {runner.id} on pass rate ({best.pass_rate:.0%}) and is {why}"
    if best.ran < MIN_CASES_FOR_CONFIDENCE:
        confidence = "low"
        reason += f"; only {best.ran} case{'s' if best.ran != 1 else ''} ran"
    return VariantRecommendation(best.id, reason, confidence, tradeoffs)


# -- running ------------------------------------------------------------------------------------


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
        done = VariantResult(variant.id, variant.name, result, dict(variant.metadata))
        if on_variant is not None:
            on_variant(done)
        return done

    results = await asyncio.gather(*(one(v, h) for v, h in zip(variants, harnesses, strict=True)))
    return MatrixResult.of(
        name or dataset.name,
        list(results),
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )


# -- matrix files -------------------------------------------------------------------------------


@dataclass(slots=True)
class MatrixFile:
    name: str
    dataset: EvalDataset
    variants: list[Variant]
    description: str | None = None
    path: Path | None = None


def matrix_from_document(doc: Document) -> MatrixFile | ScenarioMatrix:
    """Validate a parsed matrix file and load the dataset (or the scenarios) it names."""
    if isinstance(doc.data, Mapping) and "scenarios" in doc.data:
        # Imported here: scenarios import this module (MatrixResult).
        from signal_eval_cli.scenarios.matrix import scenario_matrix_from_document

        return scenario_matrix_from_document(doc)
    return _dataset_matrix(doc)


def _dataset_matrix(doc: Document) -> MatrixFile:
    problems = validate_document(doc, "matrix")
    if problems:
        raise InputError(problems)
    data = doc.data
    seen: dict[str, int] = {}
    for i, variant in enumerate(data["variants"]):
        if variant["id"] in seen:
            problems.append(
                doc.problem(
                    ("variants", i, "id"),
                    f"duplicate variant id '{variant['id']}' "
                    f"(first at variant {seen[variant['id']] + 1})",
                )
            )
        seen.setdefault(variant["id"], i)
    base_dir = Path(doc.path).parent
    dataset_path = base_dir / data["dataset"]
    try:
        unread = None if dataset_path.is_file() else "dataset file not found"
    except OSError as exc:  # a name too long for the file system, say
        unread = f"cannot read the dataset file: {exc.strerror or exc}"
    if unread is not None:
        problems.append(doc.problem(("dataset",), f"{unread}: {shorten(str(dataset_path))}"))
    if problems:
        raise InputError(problems)
    dataset = load_dataset(dataset_path)
    variants = [
        Variant(
            id=v["id"],
            name=v.get("name", v["id"]),
            harness=HarnessSpec.from_data(v["harness"]) if "harness" in v else None,
            params=dict(v.get("params") or {}),
            metadata=dict(v.get("metadata") or {}),
            base_dir=base_dir,
        )
        for v in data["variants"]
    ]
    if dataset.harness is None:
        missing = [
            doc.problem(
                ("variants", i, "id"),
                f"variant '{v.id}' names no harness and the dataset has none: add "
                "'harness: pkg.module:factory' to the variant",
            )
            for i, v in enumerate(variants)
            if v.harness is None
        ]
        if missing:
            raise InputError(missing)
    return MatrixFile(
        name=str(data.get("name") or dataset.name),
        dataset=dataset,
        variants=variants,
        description=data.get("description"),
        path=Path(doc.path),
    )


def load_matrix(path: str | Path) -> MatrixFile | ScenarioMatrix:
    """Load and validate a matrix file and its dataset; :class:`InputError` lists problems."""
    doc = load_document(path)
    if not isinstance(doc.data, Mapping):
        raise InputError(
            [doc.problem((), "a matrix must be a mapping with 'dataset' and 'variants'")]
        )
    if "cases" in doc.data and "variants" not in doc.data:
        raise InputError(
            [
                doc.problem(
                    (),
                    "this is a dataset (it has 'cases'): run it with `signal-eval run`; "
                    "`matrix` takes a file with 'dataset' and 'variants'",
                )
            ]
        )
    return matrix_from_document(doc)


register_document_kind(
    DocumentKind("matrix", lambda data: "variants" in data, matrix_from_document)
)
