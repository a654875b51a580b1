"""Resolving entry-point strings (``pkg.mod:attr``, ``path/file.py:attr``, registered names)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, closest
from signal_eval_cli.paths import base_dir_of, resolve_from

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "check_harness",
    "forget_harness_files",
    "load_factory",
    "load_object",
    "resolve_harness",
]

ENTRY_POINT_GROUP = "signal_eval.harnesses"

BUILT_IN = {
    "reactive": "signal_eval_cli.harness.reactive:create_harness",
    "openai-agents": "signal_eval_cli.harness.openai_agents:create_harness",
    "langgraph": "signal_eval_cli.harness.langgraph:create_harness",
    "otel": "signal_eval_cli.harness.otel:create_harness",
}
"""The harnesses ``pyproject.toml`` registers in :data:`ENTRY_POINT_GROUP`, found without
reading every installed distribution's metadata (about 50 ms of each start)."""


def _fail(spec: str, message: str) -> InputError:
    return InputError(f"harness '{spec}': {message}")


def load_factory(spec: str, *, base_dir: Path | None = None) -> Callable[..., Any]:
    """Import what ``spec`` names. Errors say what was imported and what was missing."""
    if ":" not in spec:
        return _registered(spec)
    target = load_object(spec, base_dir=base_dir)
    if not callable(target):
        module, _, attribute = spec.rpartition(":")
        raise _fail(spec, f"'{attribute}' in '{module}' is not callable")
    return target  # type: ignore[no-any-return]


def load_object(spec: str, *, base_dir: Path | None = None) -> Any:
    """The object ``pkg.mod:attr`` or ``path/file.py:attr`` names (an agent, a graph)."""
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise _fail(spec, "expected 'package.module:attribute' or 'path/to/file.py:attribute'")
    from_file = module_part.endswith(".py") or "/" in module_part or "\\" in module_part
    if from_file:
        module = _import_file(spec, module_part, base_dir)
    else:
        try:
            module = _import_module(module_part, base_dir)
        except ModuleNotFoundError as exc:
            raise _fail(spec, f"cannot import module '{module_part}' ({exc})") from None
        except Exception as exc:
            raise _fail(
                spec, f"importing '{module_part}' raised {type(exc).__name__}: {exc}"
            ) from None
    target: Any = module
    owner = f"{module_part} ({module.__file__})" if from_file else f"module '{module_part}'"
    for part in attribute.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            guess = closest(part, names)
            hint = f"did you mean '{guess}'?" if guess else f"it has: {', '.join(names)[:300]}"
            raise _fail(spec, f"{owner} has no attribute '{part}' ({hint})")
        target = getattr(target, part)
    return target


def _import_module(name: str, base_dir: Path | None) -> Any:
    """Import ``name``; when it is not importable as things stand, look for its top-level
    package the way pytest finds its rootdir: in the dataset's folder, then each parent
    (so ``mypkg.agents`` works from a project root without ``PYTHONPATH=.``)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = name.split(".")[0]
        if base_dir is None or exc.name != top:
            raise
        base_dir = resolve_from(base_dir, None)
        for folder in (base_dir, *base_dir.parents):
            if (folder / top).is_dir() or (folder / f"{top}.py").is_file():
                sys.path.insert(0, str(folder))  # kept: the harness may import its siblings
                return importlib.import_module(name)
        raise


_FILE_MODULE = "signal_eval_user_"
"""The prefix of the module name a harness file (``h.py:create``) is imported under."""


def forget_harness_files() -> None:
    """Have the next run import each harness file anew, as a run of the CLI does in its
    own process: its module's globals (a counter, a list of calls) start from its code
    again, not from what an earlier run in this process left (the pytest plugin's runs).
    Within one run a file is imported once, however many times its factory is loaded."""
    for name in [n for n in sys.modules if n.startswith(_FILE_MODULE)]:
        del sys.modules[name]


def _import_file(spec: str, file_part: str, base_dir: Path | None) -> Any:
    path = resolve_from(file_part, base_dir)
    if not path.is_file():
        raise _fail(spec, f"file not found: {path}")
    name = f"{_FILE_MODULE}{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise _fail(spec, f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _fail(spec, f"running {path} raised {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(path.parent))
    return module


def _registered(name: str) -> Callable[..., Any]:
    if name in BUILT_IN:
        return load_factory(BUILT_IN[name])
    import importlib.metadata

    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for entry in found:
        if entry.name == name:
            try:
                return entry.load()  # type: ignore[no-any-return]
            except Exception as exc:
                raise _fail(name, f"loading entry point '{entry.value}' raised {exc}") from None
    known = ", ".join(sorted({*BUILT_IN, *(e.name for e in found)}))
    raise _fail(
        name,
        f"not an entry-point string ('pkg.module:attr' or 'file.py:attr') and no harness is "
        f"registered under that name in '{ENTRY_POINT_GROUP}' (registered: {known})",
    )


def resolve_harness(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    base_dir: Path | None = None,
    dataset_path: Path | None = None,
) -> Any:
    """Load the factory and call it with ``params`` as keyword arguments.

    A factory that declares a ``dataset_dir`` parameter also gets ``base_dir`` there
    (default: the dataset's directory), and one that declares ``dataset_path`` gets the
    dataset file, so paths in its params can be relative to the dataset (others never
    see them).
    """
    if base_dir is None and dataset_path is not None:
        base_dir = base_dir_of(dataset_path)
    factory = load_factory(spec, base_dir=base_dir)
    kwargs = dict(params or {})
    if base_dir is not None and _declares(factory, "dataset_dir"):
        kwargs.setdefault("dataset_dir", base_dir)
    if dataset_path is not None and _declares(factory, "dataset_path"):
        kwargs.setdefault("dataset_path", dataset_path)
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as exc:
        raise _fail(spec, f"the factory does not take params {dict(params or {})}: {exc}") from None
    except ValueError:  # no signature to check (a builtin): let the call decide
        pass
    try:
        harness = factory(**kwargs)
    except InputError:
        raise
    except Exception as exc:  # the user's factory failed: say so, no traceback
        raise _fail(spec, f"the factory raised {type(exc).__name__}: {exc}") from None
    if not callable(getattr(harness, "run", None)) and not callable(harness):
        raise _fail(
            spec,
            f"the factory returned {type(harness).__name__}, which is neither a harness "
            "(an object with run(input, ctx)) nor a callable (input, ctx)",
        )
    return harness


def check_harness(
    spec: str,
    params: Mapping[str, Any],
    *,
    dataset_path: Path | None,
    provider: str | None = None,
    recording: bool = False,
    base_dir: Path | None = None,
    inputs: Sequence[Any] | None = None,
) -> None:
    """What ``validate`` (and ``run``, before any case) can check without running a case:
    the factory imports and is callable, takes ``params``, and (when it has a
    ``check_params(params, base_dir, dataset_path, recording)`` hook, as ``reactive`` does
    for its agents file and cassette) that its params are sound; with the cases'
    ``inputs``, what a ``check_inputs(params, base_dir, inputs)`` hook finds in them (a
    reactive prompt's ``{input.x}`` that no input holds). ``provider`` is ``run
    --provider``, which replaces the params' one for a factory that declares it;
    ``recording`` is ``run --record``/``--record-missing`` (the run writes the cassette).
    ``base_dir``, ``dataset_path``: as :func:`resolve_harness` takes them."""
    if base_dir is None and dataset_path is not None:
        base_dir = base_dir_of(dataset_path)
    factory = load_factory(spec, base_dir=base_dir)
    if provider is not None and _declares(factory, "provider"):
        params = {**params, "provider": provider}
    kwargs = dict(params)
    for name, value in (("dataset_dir", base_dir), ("dataset_path", dataset_path)):
        if value is not None and _declares(factory, name):
            kwargs.setdefault(name, value)
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as exc:
        raise _fail(spec, f"the factory does not take params {dict(params)}: {exc}") from None
    except ValueError:  # no signature to check (a builtin)
        pass
    check = getattr(factory, "check_params", None)
    if callable(check):
        check(params, base_dir, dataset_path, recording)
    check_inputs = getattr(factory, "check_inputs", None)
    if inputs is not None and callable(check_inputs):
        check_inputs(params, base_dir, inputs)


def _declares(factory: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return False
