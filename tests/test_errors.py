"""One exception root: every error the package raises on purpose is an ``EvalError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import signal_eval_cli
from signal_eval_cli.errors import EvalError, IncompatibleResults, InputError

INTERNAL = {"signal_eval_cli.quick_yaml.Unsure", "signal_eval_cli.harness.protocol.HarnessRaised"}
"""Control flow, never shown: the fast YAML path hands over to the full loader; a harness's
own ``BaseException`` is carried to the runner, which unwraps it (``deadline``)."""

WERE_VALUE_ERRORS = {
    "AgentTaskError",
    "IncompatibleResults",
    "InvalidAssertion",
    "JsonProblem",
    "JunitError",
    "PatchError",
    "RegexTimeout",
}
"""Callers catch these as ``ValueError``: they stay ``ValueError`` s."""


def _public_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(signal_eval_cli.__path__, "signal_eval_cli."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Exception)
                and not issubclass(obj, Warning)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_public_error_of_the_package_derives_from_eval_error() -> None:
    found = _public_exceptions()
    # the walk sees the errors the issue named, so an empty walk cannot pass
    names = {qualified.rsplit(".", 1)[1] for qualified in found}
    assert {"ProviderError", "JudgeError", "TraceFormatError", "AgentTaskError"} <= names
    assert {"PatchError", "JunitError", "IncompatibleResults", "InputError"} <= names
    strays = sorted(
        q for q, cls in found.items() if q not in INTERNAL and not issubclass(cls, EvalError)
    )
    assert strays == []


@pytest.mark.parametrize("name", sorted(WERE_VALUE_ERRORS))
def test_errors_that_were_value_errors_still_are(name: str) -> None:
    classes = [c for q, c in _public_exceptions().items() if q.endswith(f".{name}")]
    assert classes and all(
        issubclass(c, (EvalError)) and issubclass(c, ValueError) for c in classes
    )


def test_incompatible_results_is_public_and_one_class_wherever_it_is_imported() -> None:
    from signal_eval_cli.compare import IncompatibleResults as from_compare

    assert signal_eval_cli.IncompatibleResults is IncompatibleResults is from_compare
    assert not issubclass(IncompatibleResults, InputError)  # the CLI converts it (exit 2)
