r"""The model proxy of a scenario run: agents' and goals' model calls recorded, replayed,
and traced like a dataset harness's.

A scenario's calls are kept in ``cassettes/<file stem>.proxy.yaml`` beside its file
(``cassettes/<id>.proxy.yaml`` under the current directory for a scenario given inline).
The run starts one :class:`~signal_eval_cli.proxy.server.ModelProxy` per cassette
before any scenario runs (so a broken cassette is bad input, exit 2) and stops them at
its end. Each run of a scenario (``--repeat``) is its own session ``(id, run)``; in
``auto`` mode a cassette that exists is replayed, else calls pass through live.

In a matrix over scenarios each variant has its own :class:`ScenarioProxies` on one
``cassette`` beside the matrix file (see :func:`~signal_eval_cli.matrix.variant_cassette`):
two variants run the same scenario, and their recordings must never meet.

On Ray the proxies travel to the actors as copies (see
:class:`~signal_eval_cli.proxy.server.ModelProxy`): each actor :meth:`~ScenarioProxies.serve`\ s
them, hands back what each scenario run did (:meth:`~ScenarioProxies.take`), and the
driver's proxies :meth:`~ScenarioProxies.absorb` it and write the cassettes once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from signal_eval_cli.providers.pricing import PriceTable
from signal_eval_cli.proxy.cassette import ProxyCassette
from signal_eval_cli.proxy.recorder import MODES, Handover, Mode
from signal_eval_cli.proxy.route import CaseRoute
from signal_eval_cli.proxy.server import ModelProxy, Upstream
from signal_eval_cli.proxy.session import CaseSession, Emit
from signal_eval_cli.scenarios.model import Scenario

__all__ = ["ScenarioProxies", "scenario_cassette", "stop_scenario_proxies"]


def scenario_cassette(scenario: Scenario) -> Path:
    """Where a scenario's proxied model calls are recorded."""
    if scenario.source is None:
        return Path.cwd() / "cassettes" / f"{scenario.id}.proxy.yaml"
    return scenario.directory / "cassettes" / f"{scenario.source.stem}.proxy.yaml"


class ScenarioProxies:
    """The proxies of one scenario run: :meth:`start`, :meth:`open`/:meth:`close` per
    scenario run, :meth:`stop` at the end (also on Ctrl-C or a crash)."""

    def __init__(
        self,
        mode: str = "auto",
        *,
        prices: PriceTable | None = None,
        upstream: Upstream | None = None,
        cassette: Path | None = None,
    ) -> None:
        if mode != "auto" and mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}")
        self.mode = mode
        self.prices = prices
        self.upstream = upstream
        self.cassette = cassette
        """Every scenario's cassette (a matrix variant's), else each its own."""
        self.proxies: dict[Path, ModelProxy] = {}
        self.cassettes: dict[str, Path] = {}
        """Each scenario's cassette, as found here (an actor's working directory differs)."""

    def start(self, scenarios: Sequence[Scenario]) -> ScenarioProxies:
        """Serve every cassette these scenarios use (loading it: InputError if broken)."""
        users: dict[Path, list[str]] = {}
        for scenario in scenarios:
            path = self.cassettes.setdefault(scenario.id, self._cassette(scenario))
            users.setdefault(path, []).append(scenario.id)
        for path, ids in users.items():
            if path in self.proxies:
                continue
            cassette = ProxyCassette(path)
            mode = self.mode
            if mode == "auto":
                mode = "replay" if cassette.exists() else "live"
            proxy = ModelProxy(
                cassette,
                cast(Mode, mode),  # checked against MODES in __init__
                upstream=self.upstream,
                prices=self.prices,
                case_order=ids,
            )
            self.proxies[path] = proxy.start()
        return self

    def serve(self) -> ScenarioProxies:
        """Start the copies of the proxies an actor received (recordings included)."""
        for proxy in self.proxies.values():
            proxy.start()
        return self

    def _cassette(self, scenario: Scenario) -> Path:
        return self.cassette or scenario_cassette(scenario)

    def _proxy(self, scenario: Scenario) -> ModelProxy:
        return self.proxies[self.cassettes.get(scenario.id) or self._cassette(scenario)]

    def take(self, scenario: Scenario) -> Handover:
        """What the finished runs of ``scenario`` recorded, missed and failed (on an actor)."""
        return self._proxy(scenario).take([scenario.id])[scenario.id]

    def absorb(self, scenario: Scenario, handover: Handover) -> None:
        """Keep what an actor's copy did for ``scenario`` (written by :meth:`stop`)."""
        self._proxy(scenario).absorb(handover)

    def open(self, scenario: Scenario, run: int, emit: Emit) -> CaseRoute:
        """This run of ``scenario`` as a case of its cassette's proxy; its calls' signals
        go to ``emit`` (called from the proxy's thread)."""
        return self._proxy(scenario).open(scenario.id, run, emit)

    async def settled(self, scenario: Scenario, route: CaseRoute) -> bool:
        """Wait until this run's model calls in flight are done (their signals emitted)."""
        return await self._proxy(scenario).settled(route)

    async def finish(
        self, scenario: Scenario, route: CaseRoute, *, completed: bool
    ) -> CaseSession | None:
        """The scenario run ended: once its calls are done, keep its recording when it
        ``completed``."""
        return await self._proxy(scenario).finish(route, completed=completed)

    def close(self, scenario: Scenario, route: CaseRoute, *, completed: bool) -> CaseSession | None:
        """The scenario run was cut short or is already finished (idempotent)."""
        return self._proxy(scenario).close(route, completed=completed)

    def stop(self) -> list[Path]:
        """Stop serving and write what the finished scenario runs recorded; the files."""
        written: list[Path] = []
        for proxy in self.proxies.values():
            proxy.stop()
            written += proxy.save()
        return written

    @property
    def misses(self) -> list[str]:
        return [m for p in self.proxies.values() for m in p.misses]

    @property
    def failures(self) -> list[str]:
        return [m for p in self.proxies.values() for m in p.failures]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stop_scenario_proxies(
    proxies: ScenarioProxies, note: Callable[[str], None] = _stderr
) -> list[Path]:
    """Stop the run's proxies and write what they recorded (:meth:`ScenarioProxies.stop`),
    telling ``note`` where recordings went and what had none, as
    :func:`~signal_eval_cli.run_config.stop_proxy` does for a dataset run's proxy."""
    written = proxies.stop()
    for path in written:
        note(f"recorded the scenarios' model calls to {path}")
    misses = proxies.misses
    if misses:
        note(f"{len(misses)} model call(s) had no recording")
    for failure in proxies.failures[:5]:
        note(f"not recorded: {failure}")
    return written
