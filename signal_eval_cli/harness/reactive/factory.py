"""The ``reactive`` entry point: the agents, and which provider answers them (a cassette
replayed, or a real provider recording into one), checked before any case runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, ParamError, Problem
from signal_eval_cli.harness.reactive.run import ReactiveHarness
from signal_eval_cli.harness.reactive.spec import AgentsSpec, load_agents
from signal_eval_cli.harness.reactive.templates import placeholders
from signal_eval_cli.loading import kind_of
from signal_eval_cli.paths import base_dir_of, harness_cassette, resolve_from
from signal_eval_cli.patterns import get_path
from signal_eval_cli.providers.base import Provider
from signal_eval_cli.providers.registry import make_provider

__all__ = ["create_harness"]


def create_harness(
    agents: str | Path | Sequence[Any] | Mapping[str, Any],
    cassette: str | Path | None = None,
    provider: str | Provider | None = None,
    max_activations: int | None = None,
    *,
    dataset_dir: str | Path | None = None,
    dataset_path: str | Path | None = None,
    latency_scale: float = 0.0,
    provider_options: Mapping[str, Any] | None = None,
    **params: Any,
) -> ReactiveHarness:
    """Build the reactive harness (entry point ``reactive``).

    Args:
        agents: an agents YAML file (relative paths resolve against the dataset's
            directory), a list of agents, or a mapping (see :func:`load_agents`).
        cassette: the cassette to replay; default ``cassettes/<dataset-stem>.yaml``
            beside the dataset (``<agents-file-stem>`` when the dataset is unknown);
            see :mod:`signal_eval_cli.paths`.
        provider: a :class:`Provider` object, ``"cassette"`` (the default), or a spec
            such as ``"openai:gpt-4o"`` handed to
            ``signal_eval_cli.providers.registry.make_provider(spec, **provider_options)``.
        max_activations: runaway guard; overrides the agents file (default 50).
        dataset_dir: the dataset's directory (passed by the CLI); ``dataset_path``
            the dataset file itself, which also names the default cassette.
        latency_scale: replay sleeps this fraction of each recorded latency (0: none).
        **params: extra values for prompt templates, as ``{params.<name>}``.
    """
    base_dir = _base_dir(dataset_dir, dataset_path)
    spec = load_agents(agents, base_dir=base_dir)
    if max_activations is not None and (
        not isinstance(max_activations, int) or max_activations < 1
    ):
        raise InputError(
            f"reactive harness: max_activations must be a whole number >= 1, got {max_activations!r}"
        )
    if isinstance(provider, str) and provider != "cassette":
        options = dict(provider_options or {})
        if base_dir is not None:
            options.setdefault("base_dir", base_dir)  # relative cassette: paths
        if "cassette" not in options and (cassette or dataset_path or spec.path):
            options["cassette"] = str(_cassette_path(cassette, spec, base_dir, dataset_path))
        chosen = make_provider(provider, **options)
    elif provider is not None and not isinstance(provider, str):
        chosen = provider
    else:
        path = _cassette_path(cassette, spec, base_dir, dataset_path)
        if not path.is_file():
            raise InputError([Problem(str(path), 0, 0, _NOT_RECORDED)])
        from signal_eval_cli.providers.recording import RecordingProvider  # a replay's

        chosen = RecordingProvider.replaying(path, latency_scale=latency_scale)
    return ReactiveHarness(spec, chosen, max_activations=max_activations, params=params)


_NOT_RECORDED = (
    "cassette not found (record one with --record --provider openai:<model>, or pass cassette=PATH)"
)


def _check_params(
    params: Mapping[str, Any], base_dir: Path | None, dataset_path: Path | None, recording: bool
) -> None:
    """For ``validate`` and ``run`` before any case: the agents file exists and is valid,
    and so does the cassette a replay reads (not one a real provider may call live
    without, nor one ``recording`` writes): ``validate`` said "ok" of a dataset whose
    cassette was empty or cut off, which ``run`` then refused."""
    if "agents" not in params:
        raise InputError("reactive harness: params need 'agents' (an agents YAML file)")
    for name, (types, what) in _PARAM_TYPES.items():
        value = params.get(name)
        if (value is not None or name == "agents") and not isinstance(value, types):
            raise ParamError(name, f"'{name}': expected {what}, got {kind_of(value)}")
    try:
        spec = load_agents(params["agents"], base_dir=base_dir)
    except InputError as exc:
        if all(p.line > 0 for p in exc.problems):
            raise  # located inside the agents file itself
        raise ParamError("agents", exc.problems) from None
    provider = params.get("provider")
    if recording:
        return
    if provider is None or provider == "cassette":
        param = "cassette" if "cassette" in params else None  # None: the default one
        path = _cassette_path(params.get("cassette"), spec, base_dir, dataset_path)
    elif isinstance(provider, str) and provider.startswith("cassette:"):
        param, path = "provider", resolve_from(provider.partition(":")[2], base_dir)
    else:
        return
    if not path.is_file():
        raise ParamError(param, [Problem(str(path), 0, 0, _NOT_RECORDED)])
    from signal_eval_cli.providers.cassette import Cassette  # a replay's

    Cassette.load(path)  # read as the replay reads it: an empty or broken one, located


# What a dataset may give the params that name files or a provider (the others are
# template values): anything else is refused, located at the param, before it is used.
_PARAM_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "agents": ((str, list, Mapping), "an agents file path, a list of agents or a mapping"),
    "cassette": ((str,), "a cassette file path"),
    "provider": ((str,), "a provider such as 'cassette' or 'openai:gpt-4o-mini'"),
}


def _check_inputs(params: Mapping[str, Any], base_dir: Path | None, inputs: Sequence[Any]) -> None:
    """For ``validate`` and ``run`` before any case: a prompt's ``{input.x}`` that no case's
    input holds is a typo, not an optional field (one that some cases hold renders as
    nothing where it is missing), so it would render as nothing in every case, silently."""
    if not inputs:
        return
    spec = load_agents(params["agents"], base_dir=base_dir)
    found = []
    for agent in spec.agents:
        for template in (agent.system, agent.prompt):
            for path in placeholders(template or ""):
                if path.startswith(("input.", "input[")) and not any(
                    get_path({"input": value}, path)[0] for value in inputs
                ):
                    found.append(
                        f"agent '{agent.id}' names {{{path}}}, which no case's input holds: "
                        "it would render as nothing in every case"
                    )
    if found:
        raise ParamError("agents", "; ".join(dict.fromkeys(found)))


create_harness.check_params = _check_params  # type: ignore[attr-defined]
create_harness.check_inputs = _check_inputs  # type: ignore[attr-defined]


def _base_dir(dataset_dir: str | Path | None, dataset_path: str | Path | None) -> Path | None:
    if dataset_dir is not None:
        return resolve_from(dataset_dir, None)
    return base_dir_of(dataset_path) if dataset_path is not None else None


def _cassette_path(
    cassette: str | Path | None,
    spec: AgentsSpec,
    base_dir: Path | None,
    dataset_path: str | Path | None,
) -> Path:
    path = harness_cassette(cassette, dataset_path, base_dir)
    if path is not None:
        return path
    if spec.path is None:
        raise InputError("reactive harness: agents given inline and no dataset: pass cassette=PATH")
    # no dataset (library use): name it after the agents file, in the same place
    return resolve_from(Path("cassettes") / f"{spec.path.stem}.yaml", base_dir)
