"""Hostile input files (issue 11, findings 1-5): refused fast, located, exit 2, no traceback."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signal_eval_cli.case_index import SEAL_KEY, open_sealed
from signal_eval_cli.cli import app
from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.errors import InputError, closest, edit_distance
from signal_eval_cli.limits import MAX_ALIAS_NODES, MAX_DEPTH, JsonProblem, loads_json
from signal_eval_cli.loading import parse_yaml
from signal_eval_cli.persistence import load_result, save_result

CLI = Path(sys.executable).parent / "signal-eval"
ROOT = Path(__file__).resolve().parent.parent


def validate(path: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [CLI, "validate", path.name], cwd=path.parent, capture_output=True, text=True, timeout=120
    )
    return done, time.monotonic() - started


def alias_bomb(levels: int) -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    previous = "a"
    for name in "bcdefghij"[: levels - 1]:
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
        previous = name
    lines.append(f"cases: [{{id: a, input: *{previous}}}]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_at_the_alias_before_expanding(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(7))  # 9**7 "lol"s: ~30 GB as a tree
    done, seconds = validate(path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"bomb.yaml:6:8: aliases expand to more than {MAX_ALIAS_NODES:,} values" in done.stderr
    # The limit (not the file) decides: measured inside the process, startup excluded; a
    # bound on expanding the ~30 GB tree (minutes, or memory exhausted), not on speed.
    started = time.monotonic()
    with pytest.raises(InputError):
        parse_yaml(alias_bomb(7), "bomb.yaml")
    assert time.monotonic() - started < 20, seconds


def test_aliases_within_the_limit_still_work_and_are_indexed_once() -> None:
    doc = parse_yaml(alias_bomb(3), "ok.yaml")  # 9**3 values: fine
    assert len(doc.data["cases"][0]["input"]) == 9
    assert len(doc.values) < 100  # the alias' subtree is not walked again


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(InputError, match=r"x\.yaml:1:11: alias \*a refers to itself"):
        parse_yaml("a: &a [1, *a]\ncases: []\n", "x.yaml")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("deep.yaml", "cases:\n  - input: " + "[" * 600 + "]" * 600 + "\n", "deep.yaml:2:"),
        (
            "deep.json",
            '{"cases": [{"id": "a", "input": ' + "[" * 1200 + "]" * 1200 + "}]}",
            "deep.json:1:",
        ),
        ("ctrl.yaml", "name: x\x08\ncases: []\n", "ctrl.yaml:1:8: control character '\\x08'"),
        ("int.yaml", "cases:\n  - id: a\n    timeout: " + "9" * 5000 + "\n", "int.yaml:3:14:"),
        ("int.json", '{"cases": [{"id": "a", "timeout": ' + "9" * 5000 + "}]}", "int.json:1:"),
        ("nan.json", '{"cases": [{"id": "a", "timeout": NaN}]}', "nan.json:1:"),
        ("inf.yaml", "cases:\n  - id: a\n    timeout: .inf\n", "inf.yaml:3:14:"),
        ("float.yaml", "cases:\n  - id: a\n    input: x\n    assertions: [1.5]\n", "float.yaml:4:"),
        ("date.yaml", "cases:\n  - id: a\n    input: 2024-13-45\n", "date.yaml:3:12:"),
    ],
)
def test_malformed_values_are_located_input_errors(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done, _ = validate(path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert where in done.stderr


HALF_PAIR = "a \\u escape of half a UTF-16 surrogate pair (\\ud800-\\udfff) with no other half"


@pytest.mark.parametrize(
    ("scalar", "where", "says"),
    [
        (r'"ab\uD800cd"', "3:15", HALF_PAIR),
        (r'"ab\udc00"', "3:15", HALF_PAIR),
        (r'"ab\U0000D800"', "3:15", HALF_PAIR),
        (r'"ßé\uD83D"', "3:15", HALF_PAIR),  # columns in characters, not bytes
        ('"first line\n      then \\uDFFF"', "4:12", HALF_PAIR),  # a scalar over two lines
        (r'{k: "x\uD83D\uDE00"}', "3:18", r"\uD83D\uDE00 is a UTF-16 surrogate pair"),
        (r'"\U00110000"', "3:13", r"\U00110000 is past the last Unicode character"),
    ],
)
def test_a_unicode_escape_yaml_refuses_says_what_it_is_at_its_backslash(
    scalar: str, where: str, says: str
) -> None:
    """libyaml said only "found invalid Unicode character escape code" (JSON's reader says
    half a pair); a pair written as two escapes, which JSON joins, gets the one escape
    YAML reads."""
    text = f"cases:\n  - id: a\n    input: {scalar}\n"
    with pytest.raises(InputError) as caught:
        parse_yaml(text, "x.yaml")
    (problem,) = caught.value.problems
    assert str(problem).startswith(f"x.yaml:{where}: {says}"), problem
    if "pair is" in says:
        assert str(problem).endswith("write the character itself, or \\U0001F600")


@pytest.mark.parametrize("bound", [".inf", "-.Inf", ".NaN"])
def test_a_non_finite_bound_is_refused_saying_how_to_write_no_bound(bound: str) -> None:
    """``.inf`` is no bound a dataset can hold: JSON, the schemas (and the TypeScript
    reference's Zod numbers) have no infinity; ``metric.latency.max: .inf`` is the bound
    left out."""
    text = f"cases:\n  - id: a\n    assertions: [{{type: metric.cost.max, value: {bound}}}]\n"
    with pytest.raises(InputError, match=r"x\.yaml:3:49: \S+ is not a finite number"):
        parse_yaml(text, "x.yaml")
    with pytest.raises(InputError, match="for no bound, leave the bound out"):
        parse_yaml(text, "x.yaml")


def test_nesting_is_bounded_at_the_documented_depth() -> None:
    ok = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    parse_yaml(f"x: {ok}\n")
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_yaml(f"x: [{ok}]\n")


def test_json_nesting_is_bounded_at_the_documented_depth_in_any_branch() -> None:
    """Mappings and lists alike count as levels, in whichever branch the deep one is, and
    the place reported is where the first level too many opens."""

    def nested(levels: int) -> str:
        inner = "1"
        for i in range(levels - 1):
            inner = f'{{"k": {inner}}}' if i % 2 else f"[{inner}]"
        return f'{{"shallow": [1, {{"a": []}}], "deep": {inner}, "after": {{}}}}'

    assert loads_json(nested(MAX_DEPTH))["after"] == {}
    too_deep = nested(MAX_DEPTH + 1)
    with pytest.raises(JsonProblem) as refused:
        loads_json(too_deep)
    assert refused.value.message == f"nested deeper than {MAX_DEPTH} levels"
    assert (refused.value.line, refused.value.column) == (1, too_deep.index("[1]") + 1)
    with pytest.raises(JsonProblem, match="nested deeper"):  # a hook's own mappings too
        loads_json(too_deep, object_pairs_hook=OrderedDict)


def test_a_huge_unknown_type_is_reported_fast_and_shortened(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(
        "name: x\ncases:\n  - id: a\n    input: hi\n    assertions: [{type: "
        + "x" * 400_000
        + "}]\n"
    )
    started = time.monotonic()  # the full table would take minutes: a bound on that, not speed
    assert closest("x" * 4_000_000, ["output.contains"]) is None
    assert edit_distance("x" * 4_000_000, "output.contains") == 4_000_000
    assert time.monotonic() - started < 10
    done, _ = validate(path)
    assert done.returncode == 2
    assert "(400,000 characters)" in done.stderr
    assert len(done.stderr) < 5_000


def test_strict_json_refuses_what_json_is_not() -> None:
    for text in ('{"a": NaN}', '{"a": -Infinity}', '{"a": 1e999}', "[" * 2000 + "]" * 2000):
        with pytest.raises(JsonProblem):
            loads_json(text)
    assert loads_json('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}


@pytest.fixture(params=[None, 0, 100_000], ids=["python-bound", "no-bound", "looser-bound"])
def int_bound(request: pytest.FixtureRequest) -> Iterator[None]:
    """The interpreter's bound on int-from-text conversion, as a user may have set it."""
    if request.param is None:
        yield
        return
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("this Python has no bound on int conversion")
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(request.param)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.usefixtures("int_bound")
def test_a_huge_json_integer_is_refused_in_our_words_whatever_the_interpreter_allows() -> None:
    """Under Python's own bound json's C parser refuses the number and we say it again our
    way; with no bound, or a looser one, our hook refuses it itself."""
    text = '{"ok": [1, -2, 3.5],\n "n": ' + "9" * 4301 + "}"
    with pytest.raises(JsonProblem) as refused:
        loads_json(text)
    assert (refused.value.line, refused.value.column) == (2, 7)
    assert refused.value.message == "integer of 4301 digits (at most 4300)"
    assert loads_json(text.replace("9" * 4301, "-" + "9" * 4300))["n"] == -int("9" * 4300)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d | {"totalCases": "@@NaN@@"},
        lambda d: d | {"cases": [d["cases"][0] | {"metrics": {"inputTokens": "@@Infinity@@"}}]},
        lambda d: d | {"cases": [d["cases"][0] | {"assertions": [1.5]}]},
        lambda d: d | {"cases": [None]},
        lambda d: d | {"metadata": json.loads("[" * 900 + "]" * 900)},
    ],
    ids=["nan-total", "infinite-tokens", "float-assertion", "null-case", "deep-metadata"],
)
def test_malformed_result_files_are_input_errors_in_compare(tmp_path: Path, edit: object) -> None:
    from results_helpers import case, dataset

    good = tmp_path / "base.json"
    save_result(dataset(case("a", False), case("b")), good)
    data = json.loads(good.read_text())
    del data["caseIndex"], data["caseIndexSha256"]
    bad = tmp_path / "cand.json"
    text = json.dumps(edit(data))  # type: ignore[operator]
    bad.write_text(text.replace('"@@NaN@@"', "NaN").replace('"@@Infinity@@"', "Infinity"))
    done = subprocess.run(
        [CLI, "compare", "base.json", "cand.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cand.json" in done.stderr


def reseal(data: bytes) -> bytes:
    seal = f'\n  "{SEAL_KEY}": "'.encode()
    start, end = data.find(b'\n  "cases": ['), data.rfind(seal)
    digest = hashlib.sha256(data[start:end]).hexdigest().encode()
    return data[: end + len(seal)] + digest + data[end + len(seal) + 64 :]


def test_a_resealed_index_with_a_wrong_type_is_not_trusted(tmp_path: Path) -> None:
    from results_helpers import case, dataset

    from signal_eval_cli.compare import compare

    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_result(dataset(case("a", False), case("b")), base)
    save_result(dataset(case("a", False), case("b")), cand)
    data = cand.read_bytes()
    forged = reseal(data.replace(b'"cost": [0.01, 0.01]', b'"cost": ["x", 0.01]', 1))
    assert forged != data
    cand.write_bytes(forged)
    assert open_sealed(forged) is None  # the lines are read instead
    assert [c.metrics.cost for c in load_result(cand, lean=True).cases] == [0.01, 0.01]
    compare(load_result(base, lean=True), load_result(cand, lean=True))
    done = subprocess.run(
        [CLI, "compare", "base.json", "cand.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_non_finite_numbers_are_written_as_null_and_read_back_as_nan(tmp_path: Path) -> None:
    from results_helpers import case, dataset

    result = dataset(case("a", False))
    result.cases[0].metrics.cost = float("nan")
    result.cases[0].duration_ms = float("inf")
    path = tmp_path / "r.json"
    save_result(result, path)
    assert "NaN" not in path.read_text() and "Infinity" not in path.read_text()
    for lean in (False, True):
        loaded = load_result(path, lean=lean).cases[0]
        assert loaded.metrics.cost != loaded.metrics.cost  # NaN


@pytest.mark.parametrize("command", ["run", "validate", "matrix", "report", "compare"])
def test_a_device_given_as_an_input_is_refused_not_read_for_ever(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/dev/zero`` as a dataset, a result or any input was read until memory ran out (a
    hang): a device is no file, exit 2. A pipe (``<(curl …)``) is still read."""
    monkeypatch.chdir(tmp_path)
    argv = [command, "/dev/zero", *(["/dev/zero"] if command == "compare" else [])]
    done = CliRunner().invoke(
        app, [*argv, *(["--markdown", "x.md"] if command == "report" else [])]
    )
    assert done.exit_code == 2, done.output
    assert "/dev/zero: cannot read" in done.output and "a device, not a file" in done.output


def test_a_dataset_read_from_a_pipe_still_runs(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.write(write, b"name: piped\ncases:\n  - {id: a, input: x, assertions: []}\n")
    os.close(write)
    try:
        assert load_dataset(f"/proc/self/fd/{read}").name == "piped"
    finally:
        os.close(read)


@pytest.mark.parametrize(
    "command", [["scenario", "loop.yaml"], ["import", "loop.yaml", "--out-dir", "signals"]]
)
def test_a_symlink_loop_given_as_an_input_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """``scenario`` and ``import`` of a symlink loop ended in a traceback (Path.resolve's
    RuntimeError: Symlink loop), where every other command says it cannot read it."""
    (tmp_path / "loop.yaml").symlink_to("again.yaml")
    (tmp_path / "again.yaml").symlink_to("loop.yaml")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, command)
    assert done.exit_code == 2, done.output
    assert "loop.yaml: cannot read" in done.output
    assert "Too many levels of symbolic links" in done.output
