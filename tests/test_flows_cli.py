"""Issue 10 item 10, CLI polish: each flow driven through the real CLI, from the project
root and from a directory outside it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from flows_helpers import CLI, ROOT, cli, project_copy, user_env

COMMANDS = ["run", "matrix", "compare", "validate", "scenario", "merge", "import", "report"]
PLACES = ["root", "outside"]


def _where(tmp_path: Path, place: str) -> tuple[Path, Path, str]:
    """(project, cwd, the prefix a user types before ``datasets/…`` from there)."""
    project = project_copy(tmp_path)
    if place == "root":
        return project, project, ""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    return project, outside, f"{project}/"


@pytest.mark.parametrize("command", COMMANDS)
def test_boolean_options_are_plain_flags_in_every_help(command: str, tmp_path: Path) -> None:
    done = cli(command, "-h", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<bool>" not in done.stdout and "BOOLEAN" not in done.stdout
    assert "--verbose" in done.stdout


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(
    "args",
    [
        ["run", "datasets/code-review.yaml", "--quiet", "true"],
        ["run", "datasets/code-review.yaml", "--fail-fast", "false"],
        ["scenario", "scenarios/python-smoke.yaml", "-q", "yes"],
        ["compare", "a.json", "b.json", "--fail-on-regression", "1"],
    ],
)
def test_a_flag_given_a_value_says_it_is_a_flag(
    tmp_path: Path, place: str, args: list[str]
) -> None:
    _, cwd, prefix = _where(tmp_path, place)
    args = [prefix + a if a.startswith(("datasets/", "scenarios/")) else a for a in args]
    done = cli(*args, cwd=cwd)
    assert done.returncode == 2, done.stdout + done.stderr
    flag = next(a for a in args if a.startswith("-"))
    assert f"{flag} is a flag and takes no value" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("place", PLACES)
def test_scenario_takes_quiet(tmp_path: Path, place: str) -> None:
    cwd = ROOT if place == "root" else tmp_path
    target = ["python-smoke"]
    if place == "outside":  # fixture paths in the repo's scenarios are relative to --root
        target = [str(ROOT / "scenarios/python-smoke.yaml"), "--root", str(ROOT)]
    loud = cli("scenario", *target, cwd=cwd)
    assert loud.returncode == 0, loud.stdout + loud.stderr
    assert "[1/1] python-smoke: pass" in loud.stderr
    quiet = cli("scenario", *target, "-q", cwd=cwd)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "[1/1]" not in quiet.stderr and "python-smoke" in quiet.stdout  # the table stays


@pytest.mark.parametrize("place", PLACES)
def test_run_takes_several_datasets_one_result_each(tmp_path: Path, place: str) -> None:
    project, cwd, prefix = _where(tmp_path, place)
    sets = [f"{prefix}datasets/code-review.yaml", f"{prefix}datasets/debugging.yaml"]
    results = tmp_path / "results"
    done = cli(
        "run", *sets, "-q", "-o", f"{results}/{{dataset}}.json",
        "--junit", f"{results}/{{dataset}}.xml", "--markdown", str(tmp_path / "summary.md"),
        cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # each example fails one case on purpose
    names = {
        p: json.loads((results / f"{p}.json").read_text())["name"]
        for p in ("code-review", "debugging")
    }
    assert names == {"code-review": "Code Review Agent Eval", "debugging": "Debugging Agent Eval"}
    assert (results / "code-review.xml").is_file() and (results / "debugging.xml").is_file()
    summary = (tmp_path / "summary.md").read_text()
    assert "Code Review Agent Eval" in summary and "Debugging Agent Eval" in summary
    assert "Code Review Agent Eval" in done.stdout and "Debugging Agent Eval" in done.stdout
    assert re.search(r"2 datasets: \d+ passed, 2 failed, 0 skipped", done.stdout), done.stdout
    # one results file for two datasets is refused before anything runs
    single = cli("run", *sets, "-q", "-o", str(tmp_path / "one.json"), cwd=cwd)
    assert single.returncode == 2 and "{dataset}" in single.stderr, single.stderr
    assert not (tmp_path / "one.json").exists()
    # a broken dataset among them: exit 2, nothing runs
    (project / "datasets" / "broken.yaml").write_text("name: x\ncases: [{id: a}]\n")
    broken = cli(
        "run", sets[0], f"{prefix}datasets/broken.yaml", "-q", "-o", f"{tmp_path}/b/{{dataset}}.json",
        cwd=cwd,
    )  # fmt: skip
    assert (
        broken.returncode == 2 and "broken.yaml:2:9: case 'a' has no 'assertions'" in broken.stderr
    )
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("place", PLACES)
def test_case_accepts_globs_and_a_pattern_matching_nothing_is_exit_2(
    tmp_path: Path, place: str
) -> None:
    _, cwd, prefix = _where(tmp_path, place)
    out = tmp_path / "r.json"
    done = cli(
        "run", f"{prefix}datasets/code-review.yaml", "-q", "--case", "sql-*",
        "--case", "*-vulnerability", "-o", str(out), cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [c["caseId"] for c in json.loads(out.read_text())["cases"]] == [
        "sql-injection",
        "xss-vulnerability",
    ]
    none = cli("run", f"{prefix}datasets/code-review.yaml", "--case", "sq-*", cwd=cwd)
    assert none.returncode == 2, none.stderr
    assert "no case id matches --case 'sq-*'" in " ".join(none.stderr.split())


@pytest.mark.parametrize("place", PLACES)
def test_matrix_progress_names_the_variant(tmp_path: Path, place: str) -> None:
    _, cwd, prefix = _where(tmp_path, place)
    done = cli("matrix", f"{prefix}datasets/matrix-code-review.yaml", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert re.search(r"\[\d+/33\] detailed-prompt › sql-injection: pass", done.stderr)
    assert re.search(r"\[\d+/33\] haiku-model › sql-injection: ", done.stderr), done.stderr


@pytest.mark.parametrize("place", PLACES)
def test_failure_reasons_stay_visible_at_60_columns(tmp_path: Path, place: str) -> None:
    _, cwd, prefix = _where(tmp_path, place)
    done = cli("run", f"{prefix}datasets/code-review.yaml", "-q", cwd=cwd, env={"COLUMNS": "60"})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 60
    text = " ".join(done.stdout.split())
    assert (
        "race-condition — output.matches: /race condition|atomic|mutex|lock/i did not match" in text
    )
    wide = cli("run", f"{prefix}datasets/code-review.yaml", "-q", cwd=cwd, env={"COLUMNS": "160"})
    assert "failed assertions" in wide.stdout  # wide enough: the column is there


HARNESS = """\
import json


def create():
    def run(input, ctx):
        return helper(input)

    return run


def helper(input):
    return input["missing"]
"""


@pytest.mark.parametrize("place", PLACES)
def test_errors_name_the_users_file_and_only_user_frames(tmp_path: Path, place: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "agents.py").write_text(HARNESS)
    for name, factory in (("typo", "creat"), ("raises", "create")):
        data = {
            "name": name,
            "harness": f"agents.py:{factory}",
            "cases": [{"id": "c", "input": {}, "assertions": []}],
        }
        (project / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    cwd = project if place == "root" else tmp_path
    at = "" if place == "root" else f"{project}/"
    typo = cli("run", f"{at}typo.yaml", cwd=cwd)
    assert typo.returncode == 2
    assert (
        f"agents.py ({project / 'agents.py'}) has no attribute 'creat' (did you mean 'create'?)"
        in typo.stderr
    )
    assert "signal_eval_user" not in typo.stderr and "Traceback" not in typo.stderr
    located = cli("validate", f"{at}typo.yaml", cwd=cwd)
    assert (
        located.returncode == 2
        and f"{at}typo.yaml:2:10: harness 'agents.py:creat'" in located.stderr
    )
    raised = cli("run", f"{at}raises.yaml", "-q", cwd=cwd)
    assert raised.returncode == 1
    assert "KeyError: 'missing' (at agents.py:12 in helper)" in raised.stdout
    assert "Traceback" not in raised.stderr
    verbose = cli("run", f"{at}raises.yaml", "-q", "--verbose", cwd=cwd)
    assert "Traceback (most recent call last)" in verbose.stderr
    assert f'File "{project / "agents.py"}", line 12, in helper' in verbose.stderr


@pytest.mark.parametrize("place", PLACES)
def test_a_cassette_miss_is_not_located_in_the_tools_own_code(tmp_path: Path, place: str) -> None:
    project, cwd, prefix = _where(tmp_path, place)
    path = project / "datasets" / "code-review.yaml"
    data = yaml.safe_load(path.read_text())
    data["cases"] = data["cases"][:1]
    data["cases"][0]["id"] = "never-recorded"
    data["harness"]["params"]["cassette"] = "cassettes/code-review.yaml"
    (project / "datasets" / "miss.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "r.json"
    done = cli("run", f"{prefix}datasets/miss.yaml", "-q", "-o", str(out), cwd=cwd)
    assert done.returncode == 1, done.stderr
    error = json.loads(out.read_text())["cases"][0]["error"]
    assert "no recorded answer for case 'never-recorded'" in error
    assert not re.search(r"\(at \w+\.py:\d+ in", error), error  # no frame of ours


@pytest.mark.parametrize("command", ["run", "compare", "scenario"])
def test_an_unset_step_summary_means_no_markdown(tmp_path: Path, command: str) -> None:
    project = project_copy(tmp_path)
    if command == "compare":
        base = project / "base.json"
        assert (
            cli("run", "datasets/code-review.yaml", "-q", "-o", str(base), cwd=project).returncode
            == 1
        )
        args = ["compare", str(base), str(base)]
    elif command == "scenario":
        args = ["scenario", str(ROOT / "scenarios/python-smoke.yaml"), "-q", "--root", str(ROOT)]
    else:
        args = ["run", "datasets/code-review.yaml", "-q", "--case", "sql-injection"]
    shell = subprocess.run(
        ["bash", "-c", '"$CLI" "$@" --markdown "$GITHUB_STEP_SUMMARY"', "sh", *args],
        cwd=project, capture_output=True, text=True, timeout=120,
        env=user_env(PATH="/usr/bin:/bin", CLI=str(CLI), HOME=str(tmp_path)),
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    assert "no Markdown report" in shell.stderr and "GITHUB_STEP_SUMMARY" in shell.stderr


FLAKY = """\
import itertools
import os

counter = itertools.count()


def create():
    def run(input, ctx):
        ok = input == "a" and os.environ["MODE"] == "base" and next(counter) % 5 != 0
        ctx.emit("text:complete", {"content": "yes" if ok else "no"})

    return run
"""


@pytest.mark.parametrize("place", PLACES)
def test_compare_with_repeats_shows_run_level_pass_rates(tmp_path: Path, place: str) -> None:
    """Case a passes 4/5 runs in the baseline and 0/5 in the candidate, b never passes:
    the case-level rates are 0% on both sides, the runs are not."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "h.py").write_text(FLAKY)
    cases = [
        {"id": i, "input": i, "assertions": [{"type": "output.contains", "text": "yes"}]}
        for i in ("a", "b")
    ]
    data = {"name": "flaky", "harness": "h.py:create", "cases": cases}
    (project / "d.yaml").write_text(yaml.safe_dump(data))
    cwd = project if place == "root" else tmp_path
    dataset = "d.yaml" if place == "root" else str(project / "d.yaml")
    for side in ("base", "cand"):
        run = cli(
            "run", dataset, "--repeat", "5", "--concurrency", "1", "-q", "-o", f"{tmp_path}/{side}.json",
            cwd=cwd, env={"MODE": side},
        )  # fmt: skip
        assert run.returncode == 1, run.stderr
    md = tmp_path / "c.md"
    done = cli(
        "compare", f"{tmp_path}/base.json", f"{tmp_path}/cand.json", "--fail-on-regression",
        "--markdown", str(md), cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    text = " ".join(done.stdout.split())
    assert "verdict: worse" in text and "runs passed 40% (4/10) → 0% (0/10)" in text, text
    assert "| runs passed | 40% (4/10) | 0% (0/10) |" in md.read_text()


def test_run_checks_every_datasets_harness_before_running_any(tmp_path: Path) -> None:
    """A typo'd factory in the second dataset stops the run before the first one runs,
    located at its harness line; a factory param given with --param counts."""
    (tmp_path / "h.py").write_text(
        "def create(tone):\n    return lambda input, ctx: [{'name': 'text:complete', 'payload': {'content': tone}}]\n"
    )
    case = [{"id": "c", "input": 1, "assertions": [{"type": "output.contains", "text": "x"}]}]
    for name, factory in (("one", "create"), ("two", "craete")):
        data = {"name": name, "harness": f"h.py:{factory}", "cases": case}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    done = cli("run", "one.yaml", "two.yaml", "-p", "tone=x", "-o", "{dataset}.json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "two.yaml:2:10: harness 'h.py:craete'" in done.stderr
        and "did you mean 'create'?" in done.stderr
    )
    assert not (tmp_path / "one.json").exists()  # nothing ran
    ok = cli("run", "one.yaml", "-p", "tone=x", "-q", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_scenario_id_outside_the_repo_says_where_it_looked(tmp_path: Path) -> None:
    done = cli("scenario", "fix-add", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"looked in {tmp_path / 'scenarios'}" in done.stderr and "Traceback" not in done.stderr


COUNTING = """\
import itertools

counter = itertools.count()


def create():
    def run(input, ctx):
        ctx.emit("text:complete", {"content": "no" if next(counter) % 5 == 0 else "yes"})

    return run
"""


@pytest.mark.parametrize("place", PLACES)
def test_run_with_repeats_shows_the_run_level_pass_rate(tmp_path: Path, place: str) -> None:
    """Every fifth run fails: 8 of 10 runs pass though no case passes all of its runs."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "h.py").write_text(COUNTING)
    check = [{"type": "output.contains", "text": "yes"}]
    cases = [{"id": name, "input": name, "assertions": check} for name in ("a", "b")]
    (project / "r.yaml").write_text(
        yaml.safe_dump({"name": "r", "harness": "h.py:create", "cases": cases})
    )
    cwd = project if place == "root" else tmp_path
    path = "r.yaml" if place == "root" else str(project / "r.yaml")
    done = cli("run", path, "--repeat", "5", "--concurrency", "1", "-q", cwd=cwd)
    assert done.returncode == 1, done.stderr
    text = " ".join(done.stdout.split())
    assert re.search(r"pass rate \d+% · runs passed 80% \(8/10\), [12] flaky", text), text
    once = cli("run", path, "-q", cwd=cwd)
    assert "runs passed" not in once.stdout  # no repeats: one figure


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_version(tmp_path: Path, flag: str) -> None:
    from importlib.metadata import version

    done = cli(flag, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"signal-eval {version('signal-eval')}"


def test_python_dash_m_runs_the_command_line(tmp_path: Path) -> None:
    """``python -m signal_eval_cli``, as a new user tries it (it said the package "cannot
    be directly executed")."""
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-m", "signal_eval_cli", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"signal-eval {version('signal-eval')}"


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_lists_every_command(tmp_path: Path, flag: str) -> None:
    done = cli(flag, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: signal-eval")
    assert all(re.search(rf"^  {command}\s", done.stdout, re.M) for command in COMMANDS), (
        done.stdout
    )
