"""Number options refuse what no run can mean: NaN anywhere (click's range checks let it
through, every comparison with NaN being false: ``--significance nan`` never found a
regression), a timeout that is not positive, a price that is not a finite number.
In-process (CliRunner): each check is over before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from signal_eval_cli.cli import COMMANDS, app
from signal_eval_cli.errors import InputError
from signal_eval_cli.pricing import parse_price


def _float_options() -> list[tuple[str, str]]:
    """Every option of every command that takes a float, as the CLI builds them."""
    group = typer.main.get_command(app)
    found = []
    for name in COMMANDS:
        for param in group.get_command(None, name).params:  # type: ignore[attr-defined]
            if param.type.name.startswith("float") and param.opts[0].startswith("--"):
                found.append((name, param.opts[0]))
    return found


FLOAT_OPTIONS = _float_options()


def test_there_are_float_options_to_check() -> None:
    assert ("run", "--timeout") in FLOAT_OPTIONS
    assert ("compare", "--significance") in FLOAT_OPTIONS


@pytest.mark.parametrize(("command", "option"), FLOAT_OPTIONS)
def test_every_float_option_refuses_nan(tmp_path: Path, command: str, option: str) -> None:
    paths = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    done = CliRunner().invoke(app, [command, *paths, option, "nan"])
    assert done.exit_code == 2, done.output
    assert f"Invalid value for '{option}'" in done.output and "not a number" in done.output


@pytest.mark.parametrize("value", ["0", "-1", "-inf"])
def test_a_timeout_must_be_positive(tmp_path: Path, value: str) -> None:
    done = CliRunner().invoke(app, ["run", str(tmp_path / "x.yaml"), f"--timeout={value}"])
    assert done.exit_code == 2, done.output
    assert "Invalid value for '--timeout'" in done.output and "more than 0" in done.output


@pytest.mark.parametrize("bad", ["m=nan:1", "m=1:inf", "m=NaN:NaN"])
def test_a_price_must_be_a_finite_number(bad: str) -> None:
    with pytest.raises(InputError, match="finite"):
        parse_price(bad)


@pytest.mark.parametrize("bad", ["x", "m=1:2:3", "m=-1:2", "m=nan:1"])
@pytest.mark.parametrize("command", ["run", "matrix"])
def test_a_malformed_price_is_refused_when_given(tmp_path: Path, command: str, bad: str) -> None:
    """--price was read only once a model was priced: a run that replays a cassette or
    reads recorded traces prices none, and took 'gpt-4o=1:2:3' (or 'x') without a word."""
    done = CliRunner().invoke(app, [command, str(tmp_path / "x.yaml"), "--price", bad])
    assert done.exit_code == 2, done.output
    assert "Invalid value for '--price'" in done.output and bad in done.output
