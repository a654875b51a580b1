"""The model proxies of a matrix run: one per variant, each on the variant's own cassette.

Two variants run the same case at once with different prompts or models, so their
recordings must never meet (:func:`~signal_eval_cli.matrix_run.variant_cassette`). Each
is started before anything runs (a broken cassette is bad input, with the proxies
started so far stopped), in the mode the run's :class:`~signal_eval_cli.run_config.ProviderPolicy`
asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.protocol import wants_proxy
from signal_eval_cli.matrix_files import MatrixFile
from signal_eval_cli.matrix_run import Variant, export_variants_env, variant_cassette
from signal_eval_cli.run_config import ProviderPolicy
from signal_eval_cli.scenarios.matrix import ScenarioMatrix, variant_proxies

if TYPE_CHECKING:
    from signal_eval_cli.proxy.server import ModelProxy
    from signal_eval_cli.scenarios.proxying import ScenarioProxies

__all__ = ["start_scenario_variant_proxies", "start_variant_proxies"]


def start_variant_proxies(
    matrix: MatrixFile,
    variants: Sequence[Variant],
    policy: ProviderPolicy,
    *,
    export_env: int | None,
) -> dict[str, ModelProxy]:
    """The proxy of each variant whose harness makes its own calls, started, by variant
    id. ``export_env`` (the run's concurrency) points this process's SDK clients made
    without ``ctx`` at them too; ``None`` on Ray, where each actor has its own."""
    started: dict[str, ModelProxy] = {}
    per_case = bool(matrix.dataset.proxy.get("perCase"))
    try:
        for variant in variants:
            if not wants_proxy(variant.build(matrix.dataset)):
                continue
            path = matrix.path or Path("matrix.yaml")
            cassette = variant_cassette(path, variant.id, per_case=per_case)
            started[variant.id] = policy.proxy(matrix.dataset, cassette).start()
    except InputError:
        for proxy in started.values():
            proxy.stop()
        raise
    if export_env is not None:
        export_variants_env(started, export_env)
    return started


def start_scenario_variant_proxies(
    matrix: ScenarioMatrix, policy: ProviderPolicy, *, export_env: int | None
) -> dict[str, ScenarioProxies]:
    """Each variant's scenario proxies, started for the matrix's scenarios, by variant id;
    ``export_env`` as for :func:`start_variant_proxies`."""
    proxies = variant_proxies(matrix, policy.mode, prices=policy.price_table())
    started: list[ScenarioProxies] = []
    try:
        for each in proxies.values():
            started.append(each.start(matrix.scenarios))
    except InputError:
        for each in started:
            each.stop()
        raise
    if export_env is not None:
        every = {f"{v}:{p}": m for v, each in proxies.items() for p, m in each.proxies.items()}
        export_variants_env(every, export_env)
    return proxies
