"""One assertion type lives in one place: its ``@assertion`` registration.

The committed schemas are what the registry generates; a type registered from Python or
by an installed plugin (an entry point in ``signal_eval.assertions``) validates and runs
from a dataset like a built-in one; the registry's flags, not the type's name, tell the
runner that a dataset needs a judge.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict, get_type_hints

import pytest
from flows_helpers import CLI, user_env

from signal_eval_cli import InputError, load_dataset
from signal_eval_cli.assertions import (
    EvalContext,
    Field,
    Options,
    Outcome,
    assertion,
    evaluate_assertion,
    registry,
)
from signal_eval_cli.assertions.documents import plugin_schema
from signal_eval_cli.assertions.options import NotRequired, Required, field_schema
from signal_eval_cli.assertions.schema import generated_texts
from signal_eval_cli.dataset import EvalCase, EvalDataset
from signal_eval_cli.errors import CheckError
from signal_eval_cli.runner import run_dataset
from signal_eval_cli.scenarios import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_schemas_are_what_the_registry_generates() -> None:
    generated = generated_texts(ROOT / "schemas")
    assert {"assertions.schema.json", "scenario.schema.json", "dataset.schema.json"} <= set(
        generated
    )
    for name, text in generated.items():
        assert (ROOT / "schemas" / name).read_text(encoding="utf-8") == text, (
            f"schemas/{name} drifted from the registry: "
            "run python -m signal_eval_cli.assertions.schema schemas"
        )


def test_the_schema_does_not_depend_on_which_family_was_imported_first() -> None:
    probe = (
        "import json\n"
        "import signal_eval_cli.assertions.judge, signal_eval_cli.assertions.files\n"
        "from signal_eval_cli.assertions.schema import assertions_schema\n"
        "print(json.dumps(assertions_schema(), indent=2, ensure_ascii=False))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "schemas" / "assertions.schema.json").read_text()


def test_every_built_in_type_has_its_fields_and_a_docstring() -> None:
    schema = json.loads((ROOT / "schemas" / "assertions.schema.json").read_text())
    scenario = json.loads((ROOT / "schemas" / "scenario.schema.json").read_text())
    for name, kind in registry.definitions().items():
        assert kind.schema is not None and kind.doc, name
        where = scenario if kind.workspace else schema
        assert where["$defs"][name]["properties"]["type"] == {"const": name}


def test_every_built_in_types_fields_are_its_options_classes() -> None:
    """Each built-in type takes an options class, and each of its fields (``type`` aside)
    is a property of the type's schema: none is dropped, none comes from elsewhere."""
    for name, kind in registry.definitions().items():
        assert kind.options is not None, f"{name} is registered without options="
        fields = [f for f in get_type_hints(kind.options, include_extras=True) if f != "type"]
        assert list((kind.schema or {})["properties"]) == fields, name


class Step(TypedDict):
    name: str
    at: NotRequired[float]


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (Any, {}),
        (dict, {"type": "object"}),
        (dict[str, int], {"type": "object"}),
        (Mapping[str, Any], {"type": "object"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (Literal["a"], {"const": "a"}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (str | bool, {"type": ["string", "boolean"]}),
        (
            list[Step],
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "at": {"type": "number"}},
                },
            },
        ),
        (
            Annotated[str, Field(minLength=1), Field(pattern="^a")],
            {"type": "string", "minLength": 1, "pattern": "^a"},
        ),
        (
            Annotated[int, {"$ref": "#/$defs/x"}, Field(description="d")],
            {"$ref": "#/$defs/x", "description": "d"},
        ),
        (Annotated[Annotated[str, {"$ref": "#/$defs/x"}], {"type": "string"}], {"type": "string"}),
    ],
)
def test_a_fields_schema_comes_from_its_annotation(annotation: Any, schema: Any) -> None:
    assert field_schema(annotation) == schema


@pytest.mark.parametrize(
    "annotation", [datetime, str | None, str | list[str], set[str], tuple[int]]
)
def test_an_annotation_no_schema_maps_is_refused(annotation: Any) -> None:
    with pytest.raises(TypeError, match="no JSON Schema for"):
        field_schema(annotation)


class Dated(TypedDict):
    value: int
    when: datetime


class NestedDated(TypedDict):
    steps: list[Dated]


def test_an_options_field_no_schema_maps_is_refused_naming_it() -> None:
    for options, where in ((Dated, "Dated.when"), (NestedDated, "NestedDated.steps: Dated.when")):
        with pytest.raises(TypeError) as caught:
            assertion("house.dated", options=options)(_words_max)
        assert f"assertion type 'house.dated': {where}: no JSON Schema for 'datetime'" in str(
            caught.value
        )
        assert "house.dated" not in registry.definitions()
    with pytest.raises(ValueError, match=r"\['properties'\] come from options="):
        assertion("house.dated", options=Lenient, schema={"properties": {}})(_words_max)


class Lenient(Options):  # total: fields are required unless NotRequired; `type` is the const
    value: Annotated[int, Field(minimum=0, description="The most words.")]
    unit: NotRequired[Literal["words", "chars"]]


class Strict(TypedDict, total=False):  # not total: fields are optional unless Required
    value: Required[int]
    unit: str


@pytest.mark.usefixtures("scratch_registry")
def test_an_options_class_says_which_fields_are_required_located_at_load(tmp_path: Path) -> None:
    """``Required``/``NotRequired`` count even with postponed annotations (where the
    class's own ``__required_keys__`` gets them wrong), and a missing field is located."""
    assertion("words.max", options=Lenient)(_words_max)
    assertion("words.most", options=Strict)(_words_max)
    assert registry.definitions()["words.max"].schema == {
        "required": ["value"],
        "properties": {
            "value": {"type": "integer", "minimum": 0, "description": "The most words."},
            "unit": {"enum": ["words", "chars"]},
        },
    }
    assert registry.definitions()["words.most"].schema == {
        "required": ["value"],
        "properties": {"value": {"type": "integer"}, "unit": {"type": "string"}},
    }
    path = tmp_path / "words.yaml"
    path.write_text(
        DATASET.replace("value: 5", "unit: words").replace("words.max, value: 2", "words.most")
    )
    with pytest.raises(InputError) as caught:
        load_dataset(path)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}:6:9: missing required field 'value' in words.max",
        f"{path}:11:22: missing required field 'value' in words.most",
    ]


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Types registered by the test are gone after it (the registry is per process)."""
    monkeypatch.setattr(registry, "_TYPES", dict(registry.definitions()))
    yield


DATASET = """\
name: words
cases:
  - id: short
    input: {}
    assertions:
      - {type: words.max, value: 5}
  - id: long
    input: {}
    assertions:
      - type: all
        assertions: [{type: words.max, value: 2}]
"""


def _words_max(a: Any, ctx: EvalContext) -> Outcome:
    """The final output has at most ``value`` words."""
    words = len(ctx.trace.output.split())
    return Outcome(words <= a["value"], f"{words} words (max {a['value']})", a["value"], words)


WORDS = {"required": ["value"], "properties": {"value": {"type": "integer", "minimum": 0}}}


def _harness(text: str) -> Any:
    def run(input: Any, ctx: Any) -> None:
        ctx.emit("text:complete", {"content": text})

    return run


@pytest.mark.usefixtures("scratch_registry")
def test_a_type_registered_from_python_validates_and_runs_from_a_dataset(tmp_path: Path) -> None:
    assertion("words.max", schema=WORDS)(_words_max)
    path = tmp_path / "words.yaml"
    path.write_text(DATASET)
    result = asyncio.run(run_dataset(_harness("one two three"), load_dataset(path)))
    verdicts = {c.case_id: (c.passed, c.assertions[0].message) for c in result.cases}
    assert verdicts["short"] == (True, "3 words (max 5)")
    assert verdicts["long"][0] is False and "3 words (max 2)" in verdicts["long"][1]

    assertion("house.free")(_words_max)  # no schema: any fields
    path.write_text(DATASET.replace("words.max, value: 5", "house.free, value: 5, anything: [1]"))
    assert load_dataset(path).cases[0].assertions[0]["anything"] == [1]

    path.write_text(DATASET.replace("value: 5", "valu: 5").replace("value: 2", 'value: "2"'))
    with pytest.raises(InputError) as caught:
        load_dataset(path)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}:6:9: missing required field 'value' in words.max",
        f"{path}:6:27: unknown field 'valu' in words.max — did you mean 'value'?",
        f"{path}:11:47: 'value': expected a whole number, got a string",
    ]


def _buggy(a: Any, ctx: EvalContext) -> Outcome:
    """A plugin's check with a bug."""
    return Outcome(1 / len(a) > 1, "never")


@pytest.mark.usefixtures("scratch_registry")
def test_a_check_that_raises_errs_its_assertion_and_the_run_goes_on(tmp_path: Path) -> None:
    assertion("words.max", schema=WORDS)(_words_max)
    assertion("house.buggy", schema={"properties": {}})(lambda a, ctx: _buggy({}, ctx))
    path = tmp_path / "words.yaml"
    two = "assertions: [{type: house.buggy}, {type: words.max, value: 9}]"
    path.write_text(DATASET.replace("assertions: [{type: words.max, value: 2}]", two))
    result = asyncio.run(run_dataset(_harness("one two three"), load_dataset(path)))
    verdicts = {c.case_id: c for c in result.cases}
    assert verdicts["short"].passed and verdicts["short"].assertions[0].message == "3 words (max 5)"
    erred = verdicts["long"].assertions[0]
    assert not verdicts["long"].passed and erred.errored
    assert erred.message.endswith("house.buggy check raised ZeroDivisionError: division by zero")
    with pytest.raises(CheckError, match=r"^house\.buggy check raised ZeroDivisionError") as caught:
        evaluate_assertion({"type": "house.buggy"}, [])
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def _first_step(a: Mapping[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """A plugin's load-time check that assumes its schema held: ``steps`` a list."""
    if a["steps"][0] == "bad":
        yield ("steps", 0), "the first step is bad"


@pytest.mark.usefixtures("scratch_registry")
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_type_s_problems_are_asked_of_its_assertions_only(tmp_path: Path, suffix: str) -> None:
    """The loader looks at every mapping with a type before it walks to the assertions
    (``documents.document_problems``): a mapping that is no assertion, here under an
    input's key, is no problem even when the type's check raises on it."""
    steps = {"type": "object", "properties": {"steps": {"type": "array"}}}
    assertion("house.steps", schema=steps, problems=_first_step)(_words_max)
    case = {"id": "a", "input": {"request": {"type": "house.steps"}}}
    data = {
        "name": "n",
        "cases": [{**case, "assertions": [{"type": "house.steps", "steps": ["ok"]}]}],
    }
    path = (tmp_path / "steps").with_suffix(suffix)
    path.write_text(json.dumps(data, indent=1))
    assert load_dataset(path).cases[0].input == {"request": {"type": "house.steps"}}
    data["cases"].append(
        {**case, "id": "b", "assertions": [{"type": "house.steps", "steps": ["bad"]}]}
    )
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(InputError) as caught:
        load_dataset(path)
    assert [str(p) for p in caught.value.problems] == [f"{path}:31:7: the first step is bad"]


@pytest.mark.usefixtures("scratch_registry")
def test_the_judge_flag_not_the_name_says_a_dataset_needs_a_judge() -> None:
    assertion("house.grader", schema={"properties": {}}, needs_judge=True)(_words_max)
    assertion("house.plain", schema={"properties": {}})(_words_max)
    for kind, judged in (("house.grader", True), ("house.plain", False), ("llm.judge", True)):
        nested = {"type": "not", "assertion": {"type": kind}}
        assert EvalDataset("j", [EvalCase("a", [nested])]).uses_judge() is judged, kind


@pytest.mark.usefixtures("scratch_registry")
def test_a_pattern_assertion_type_registered_from_python_validates_in_a_scenario(
    tmp_path: Path,
) -> None:
    def lines(a: Any, ctx: EvalContext) -> Outcome:
        """The workspace file has lines."""
        return Outcome(bool((ctx.workspace or Path()).joinpath(a["path"]).read_text()), "")

    schema = {"required": ["path"], "properties": {"path": {"type": "string"}}}
    assertion("house.lines", schema=schema, workspace=True)(lines)
    (tmp_path / "fx").mkdir()
    scenario = {"id": "demo", "adapterId": "python-pytest", "goals": ["test"]}
    scenario["fixture"] = {"path": "fx"}
    path = tmp_path / "demo.json"
    path.write_text(
        json.dumps({**scenario, "patternAssertions": [{"type": "house.lines", "path": "a"}]})
    )
    assert load_scenario(path).pattern_assertions == [{"type": "house.lines", "path": "a"}]

    bad = {
        "patternAssertions": [{"type": "house.lines", "paht": "a"}],
        "assertions": [{"type": "house.lines", "path": "a"}],
    }
    path.write_text(json.dumps({**scenario, **bad}, indent=1))
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    found = "\n".join(str(p) for p in caught.value.problems)
    assert "unknown field 'paht' in house.lines — did you mean 'path'?" in found
    assert "'house.lines' belongs under 'patternAssertions'" in found


PLUGIN = '''\
"""A plugin: its types register when its entry point is loaded."""
from typing import Annotated, TypedDict

from signal_eval_cli.assertions import EvalContext, Field, Outcome, assertion


class WordsOptions(TypedDict):
    value: Annotated[int, Field(minimum=0)]


@assertion("words.max", options=WordsOptions)
def words_max(a: WordsOptions, ctx: EvalContext) -> Outcome:
    """The final output has at most ``value`` words."""
    words = len(ctx.trace.output.split())
    return Outcome(words <= a["value"], f"{words} words (max {a['value']})", a["value"], words)
'''


def _installed_plugin(site: Path, module: str = PLUGIN) -> dict[str, str]:
    """A distribution installed into ``site`` (a ``*.dist-info`` with an entry point in
    ``signal_eval.assertions``), and the environment that puts ``site`` on the path."""
    info = site / "wordcount_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "wordcount_plugin.py").write_text(module)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wordcount-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[signal_eval.assertions]\nwords = wordcount_plugin\n")
    return {"PYTHONPATH": str(site)}


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "harness.py").write_text(
        textwrap.dedent(
            """\
            def create():
                def run(input, ctx):
                    ctx.emit("text:complete", {"content": "one two three"})
                return run
            """
        )
    )
    (project / "words.yaml").write_text("harness: harness.py:create\n" + DATASET)
    return project


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=user_env(HOME=str(cwd), **env),
        stdin=subprocess.DEVNULL,
    )


def test_an_installed_plugins_type_validates_and_runs_like_a_built_in_one(tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = _installed_plugin(tmp_path / "site")
    done = _cli("validate", "words.yaml", cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr

    done = _cli("run", "words.yaml", "--output", "result.json", cwd=project, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # one case fails, as it should
    cases = json.loads((project / "result.json").read_text())["cases"]
    verdicts = {c["caseId"]: (c["passed"], c["assertions"][0]["message"]) for c in cases}
    assert verdicts["short"] == (True, "3 words (max 5)")
    assert verdicts["long"][0] is False and "words.max: 3 words (max 2)" in verdicts["long"][1]

    probe = (  # the Python API finds the plugin's type too (its lookup loads the plugins)
        "from signal_eval_cli import evaluate_assertion\n"
        "r = evaluate_assertion({'type': 'words.max', 'value': 1},\n"
        "                       [{'name': 'text:complete', 'payload': {'content': 'a b'}}])\n"
        "print(r.passed, r.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=user_env(**env),
    )
    assert done.stdout == "False 2 words (max 1)\n", done.stderr

    text = (project / "words.yaml").read_text()
    text = text.replace("words.max, value: 5", "words.maks, value: 5")
    (project / "words.yaml").write_text(text.replace("words.max, value: 2", "words.max, valeu: 2"))
    done = _cli("validate", "words.yaml", cwd=project, env=env)
    assert done.returncode == 2
    found = done.stdout + done.stderr
    assert (
        "words.yaml:7:16: unknown assertion type 'words.maks' — did you mean 'words.max'?" in found
    )
    # the plugin's options class says which fields there are and which are required
    assert "words.yaml:12:22: missing required field 'value' in words.max" in found, found
    assert "words.yaml:12:40: unknown field 'valeu' in words.max — did you mean 'value'?" in found


def test_without_the_plugin_its_type_is_an_unknown_type_located(tmp_path: Path) -> None:
    project = _project(tmp_path)
    for command in ("validate", "run"):
        done = _cli(command, "words.yaml", cwd=project, env={})
        assert done.returncode == 2, done.stdout + done.stderr
        assert "words.yaml:7:16: unknown assertion type 'words.max'" in done.stdout + done.stderr
        assert "Traceback" not in done.stderr


def test_a_plugin_that_fails_to_load_is_named_not_a_traceback(tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = _installed_plugin(tmp_path / "site", module="raise RuntimeError('half installed')\n")
    done = _cli("validate", "words.yaml", cwd=project, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "assertion plugin 'words' (wordcount_plugin" in done.stdout + done.stderr
    assert "RuntimeError: half installed" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_the_schema_module_writes_the_schemas(tmp_path: Path) -> None:
    """``python -m signal_eval_cli.assertions.schema DIR`` rewrites what drifted, in one run."""
    for file in (ROOT / "schemas").glob("*.schema.json"):
        (tmp_path / file.name).write_text(file.read_text())
    stale = json.loads((tmp_path / "assertions.schema.json").read_text())
    del stale["$defs"]["signal.count"]
    (tmp_path / "assertions.schema.json").write_text(json.dumps(stale))
    # a bundle embeds a bundle: matrix embeds scenario, which embeds assertions
    scenario = json.loads((tmp_path / "scenario.schema.json").read_text())
    del scenario["$defs"]["assertions.schema.json"]["$defs"]["signal.count"]
    (tmp_path / "scenario.schema.json").write_text(json.dumps(scenario))
    done = subprocess.run(
        [sys.executable, "-m", "signal_eval_cli.assertions.schema", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for file in (ROOT / "schemas").glob("*.schema.json"):
        assert (tmp_path / file.name).read_text() == file.read_text(), file.name


@pytest.mark.usefixtures("scratch_registry")
def test_only_a_type_beyond_the_built_in_ones_gets_a_generated_schema() -> None:
    named_unknown = {"cases": [{"assertions": [{"type": "words.max", "value": 1}]}]}
    assert registry.is_builtin(registry.definitions()["output.contains"])
    assert plugin_schema(named_unknown) is None  # nobody registered words.max: the committed ones
    assertion("words.max", schema=WORDS)(_words_max)
    assert not registry.is_builtin(registry.definitions()["words.max"])
    generated = plugin_schema(named_unknown)
    assert generated is not None and "words.max" in generated

    def outside(a: Any, ctx: EvalContext) -> Outcome:
        return Outcome(True, "")

    outside.__module__ = "house_plugin.output"  # a family's module name, not this package's
    assertion("house.outside")(outside)
    assert not registry.is_builtin(registry.definitions()["house.outside"])


def test_user_regexes_are_found_anywhere_in_an_assertion() -> None:
    assert registry.uses_regex({"type": "output.matches", "regex": "a+"}) is True
    matcher = {"type": "tool.calledWith", "args": {"command": {"matches": "x"}}}
    assert registry.uses_regex({"type": "not", "assertion": matcher}) is True
    assert registry.uses_regex({"type": "output.contains", "text": "regex"}) is False


def test_plugins_load_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    groups: list[str] = []

    def entry_points(group: str) -> list[Any]:
        groups.append(group)
        return []

    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    registry.resolve(["output.contains", 5])  # types registered already: no plugin to load
    assert groups == []
    registry.resolve(["output.contains", "house.unknown"])
    registry.load_plugins()
    assert groups == [registry.ENTRY_POINT_GROUP]
