"""A key a harness emits never reaches a file we write (issue 11, finding 10)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from signal_eval_cli.redaction import redact_bytes, redact_text, secret_values

CLI = Path(sys.executable).parent / "signal-eval"
KEY = "sk-live-9f8e7d6c5b4a3210ffee"

LEAKY = """\
import os

def create():
    def run(input, ctx):
        key = os.environ["ACME_API_KEY"]
        ctx.emit("debug:auth", {"header": f"Bearer {key}", "nested": {"k": key}})
        ctx.emit("text:complete", {"content": f"my key is {key}"})
        ctx.emit("harness:end")
    return run
"""


def test_a_key_emitted_by_a_harness_is_redacted_in_every_output_file(tmp_path: Path) -> None:
    (tmp_path / "h.py").write_text(LEAKY)
    (tmp_path / "d.yaml").write_text(
        "name: leaky\nharness: h.py:create\ncases:\n"
        "  - id: a\n    input: x\n    assertions: [{type: output.contains, text: nothing}]\n"
    )
    env = os.environ | {"ACME_API_KEY": KEY, "SIGNAL_EVAL_REDACT": "CUSTOM_PASS"}
    outputs = ["r.json", "j.xml", "m.md", "h.html"]
    reports = ["-o", "r.json", "--junit", "j.xml", "--markdown", "m.md", "--html", "h.html"]
    done = subprocess.run(
        [CLI, "run", "d.yaml", "--signals", "all", *reports],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    for name in outputs:
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert KEY not in text, name
    assert "[REDACTED:ACME_API_KEY]" in (tmp_path / "r.json").read_text()
    from signal_eval_cli.persistence import load_result

    assert load_result(tmp_path / "r.json", lean=True).cases[0].case_id == "a"  # seal holds


def test_which_values_count_as_secrets() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abcdefgh",
        "GITHUB_TOKEN": "ghp_12345678",
        "SHORT_TOKEN": "abc",  # too short to redact safely
        "HOME": "/root/somewhere",
        "DB_PASS": "hunter2hunter2",
        "SIGNAL_EVAL_REDACT": "db_*",
    }
    assert sorted(n for n, _ in secret_values(env)) == ["DB_PASS", "GITHUB_TOKEN", "OPENAI_API_KEY"]
    assert redact_text('{"a": "x sk-abcdefgh y"}', env) == '{"a": "x [REDACTED:OPENAI_API_KEY] y"}'
    assert redact_bytes(b"ghp_12345678", env) == b"[REDACTED:GITHUB_TOKEN]"
    assert redact_text("nothing here", env) == "nothing here"


SECRET = "hunter2hunter2"


def test_an_edit_of_the_user_s_file_redacts_only_what_it_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import --case-into`` and ``scenario --update-expected`` rewrote the whole file
    through the redacting write: a case checking that a password never leaks
    (``text: hunter2hunter2``, DB_PASSWORD set) became a check for
    ``[REDACTED:DB_PASSWORD]``. Only the new case (or the new expectedDiff) is
    redacted now; every byte the user wrote is kept."""
    from signal_eval_cli.dataset import EvalCase
    from signal_eval_cli.dataset_append import append_cases
    from signal_eval_cli.scenarios.update import rewrite_strings

    monkeypatch.setenv("DB_PASSWORD", SECRET)
    dataset = tmp_path / "d.yaml"
    mine = f"name: d\ncases:\n  - id: leak\n    assertions: [{{type: output.contains, text: {SECRET}}}]\n"
    dataset.write_text(mine)
    drafted = EvalCase("new", [{"type": "output.contains", "text": SECRET}], input=SECRET)
    append_cases(dataset, [drafted])
    text = dataset.read_text()
    assert text.startswith(mine)
    assert SECRET not in text[len(mine) :] and text.count("[REDACTED:DB_PASSWORD]") == 2

    scenario = tmp_path / "s.yaml"
    mine = f"note: {SECRET}\npatternAssertions:\n  - {{type: diff-match, expectedDiff: old}}\n"
    scenario.write_text(mine)
    rewrite_strings(scenario, {("patternAssertions", 0, "expectedDiff"): f"+{SECRET}"})
    assert scenario.read_text() == mine.replace("old", '"+[REDACTED:DB_PASSWORD]"')
