"""unified_diff must print exactly what ``git diff --no-index`` prints (diffing.py).

git itself is the oracle: every comparison writes the two sides to ``a/<path>`` and
``b/<path>`` and runs git isolated from any user, system or repository configuration,
so diff.algorithm, diff.indentHeuristic and friends cannot leak in.  The realistic corpus
edits real source files from the running Python's standard library, deterministically.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signal_eval_cli import diffing
from signal_eval_cli.diffing import match_diff, normalize_diff, unified_diff

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")
GIT_META = (
    "diff --git ",
    "index ",
    "old mode ",
    "new mode ",
    "new file mode ",
    "deleted file mode ",
)


class Git:
    """Runs ``git diff --no-index`` on files it writes under one scratch directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "XDG_CONFIG_HOME": str(root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CEILING_DIRECTORIES": str(root.parent),
            "LC_ALL": "C",
        }

    def diff(self, old: str, new: str, path: str = "file.txt", context: int = 3) -> str:
        for side, text in (("a", old), ("b", new)):
            file = self.root / side / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(text.encode())
        # Empty prefixes make git label the files a/<path> and b/<path>, like unified_diff.
        cmd = [GIT or "git", "-c", "core.quotepath=off", "diff", "--no-index", "--no-color"]
        cmd += ["--no-ext-diff", f"-U{context}", "--src-prefix=", "--dst-prefix="]
        proc = subprocess.run(
            [*cmd, f"a/{path}", f"b/{path}"], cwd=self.root, env=self.env, capture_output=True
        )
        assert proc.returncode in (0, 1), proc.stderr.decode()
        lines = proc.stdout.decode().splitlines(keepends=True)
        return "".join(line for line in lines if not line.startswith(GIT_META))


@pytest.fixture(scope="module")
def git(tmp_path_factory: pytest.TempPathFactory) -> Git:
    return Git(tmp_path_factory.mktemp("gitdiff"))


def assert_same_as_git(
    git: Git, old: str, new: str, path: str = "file.txt", context: int = 3
) -> None:
    assert unified_diff(old, new, path, context) == git.diff(old, new, path, context)


# --- hand-picked edge cases ----------------------------------------------------------------

FUNC_80 = "def" + "é" * 40 + "(x):"  # byte 80 falls inside the 39th "é"
NUMBERED = "".join(f"{i} filler\n" for i in range(1, 41))  # never a function line


def below(func_line: str) -> tuple[str, str]:
    """A change a few lines under ``func_line``, which then labels the hunk."""
    return func_line + "\n" + NUMBERED, func_line + "\n" + NUMBERED.replace("9 f", "9 F", 1)


EDGE_CASES = {
    "both empty": ("", ""),
    "add to empty": ("", "one\ntwo\nthree\n"),
    "delete all": ("one\ntwo\nthree\n", ""),
    "add final newline": ("a\nb\nc", "a\nb\nc\n"),
    "drop final newline": ("a\nb\nc\n", "a\nb\nc"),
    "both without final newline": ("a\nb\nc", "a\nB\nc"),
    "last line changes, no newline": ("a\nb\nc", "a\nb\nC"),
    "empty to no newline": ("", "x"),
    "only a newline": ("\n", ""),
    "crlf": ("one\r\ntwo\r\nthree\r\n", "one\r\nTWO\r\nthree\r\n"),
    "crlf to lf": ("one\r\ntwo\r\n", "one\ntwo\n"),
    "lone cr is content": ("a\rb\nc\n", "a\rB\nc\n"),
    "splitlines separators": ("a\x0cb\n\x0b\n\x1c\x1d\x1e\n\x85\u2028\u2029\n", "a\x0cb\nX\n"),
    "func text cut mid character": below(FUNC_80),
    "func text keeps formfeed": below("func\x0c"),
    "func text with crlf": below("f(x)\r"),
    "func text strips tab": below("_x\t"),
    "func text from $": below("$v = 1"),
    "func text noncharacter": below("f\ufffeg"),
    "func text trailing space kept": below("f" + "x" * 77 + " é"),
    "func text reused": (
        "def f():\n" + NUMBERED,
        "def f():\n" + NUMBERED.replace("5 f", "5 F", 1).replace("30 f", "30 F"),
    ),
    "binary: NUL in the new side": ("text\n", "a\0b\n"),
    "binary: NUL in the old side": ("a\0b\nline\n", "a\0c\nline\n"),
    "binary: NUL at byte 7,999": ("x" * 7999 + "\0\n", "y\n"),
    "text: NUL at byte 8,000": ("x" * 8000 + "\0\n", "y\n"),
    "text: NUL at char 7,000, byte 8,000": ("é" * 4000 + "\0\n", "é\n"),
    "unicode lines": ("αβγ\n日本語\n🙂\n", "αβγ\n日本\n🙂\n"),
    "blank line slides": ("a\n\nb\n\nc\n", "a\n\nb\n\nb\n\nc\n"),
    "indent heuristic": (
        "def a():\n    x = 1\n\ndef c():\n    z = 3\n",
        "def a():\n    x = 1\n\ndef b():\n    y = 2\n\ndef c():\n    z = 3\n",
    ),
    "brace block": (
        "if (a) {\n  x();\n}\nif (c) {\n  z();\n}\n",
        "if (a) {\n  x();\n}\nif (b) {\n  y();\n}\nif (c) {\n  z();\n}\n",
    ),
}


@needs_git
@pytest.mark.parametrize("context", [0, 1, 3])
@pytest.mark.parametrize(("old", "new"), EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_edge_cases_match_git(git: Git, old: str, new: str, context: int) -> None:
    assert_same_as_git(git, old, new, context=context)


def test_func_text_is_cut_at_80_bytes_then_to_whole_characters() -> None:
    assert "\n@@ -7,7 +7,7 @@ def" + "é" * 38 + "\n 6 filler\n" in unified_diff(*below(FUNC_80))


def test_identical_inputs_give_no_diff() -> None:
    assert unified_diff("", "") == ""
    assert unified_diff("a\nb", "a\nb", context=0) == ""


def test_empty_side_uses_zero_range_and_ab_labels() -> None:
    assert unified_diff("", "x\ny\nz\n", "f.py") == (
        "--- a/f.py\n+++ b/f.py\n@@ -0,0 +1,3 @@\n+x\n+y\n+z\n"
    )


@needs_git
@pytest.mark.parametrize("context", [0, 1, 3])
@pytest.mark.parametrize("extra", [0, 1])
def test_hunks_merge_up_to_twice_the_context(git: Git, context: int, extra: int) -> None:
    gap = 2 * context + extra  # unchanged lines between the two changes
    old = "".join(f"{i}\n" for i in range(gap + 10))
    new = old.replace("4\n", "four\n", 1).replace(f"{5 + gap}\n", "later\n", 1)
    diff = unified_diff(old, new, context=context)
    assert diff.count("\n@@ ") == (1 if extra == 0 else 2)
    assert diff == git.diff(old, new, context=context)


TAILS = {
    "code": ("def f():\n    a = 1\n\n    b = 2\n", "\n    b = 2\n", "    v = 1\n" * 150),
    "blank lines": ("x\n", "\n", "\n" * 1100 + "end\n"),
    "repeated line": ("a\n", "b\n", "b\n" * 600),
}


@needs_git
@pytest.mark.parametrize("context", [0, 2])
@pytest.mark.parametrize(("head", "inserted", "tail"), TAILS.values(), ids=TAILS.keys())
def test_long_common_tail_is_trimmed_like_git(
    git: Git, head: str, inserted: str, tail: str, context: int
) -> None:
    """With -U0 git drops the common tail (whole KiB) first, so slides stop earlier."""
    assert_same_as_git(git, head + tail, head + inserted + tail, context=context)


def test_trimmed_tail_changes_where_an_insertion_lands() -> None:
    head, tail = "a\n", "b\n" * 600
    assert "@@ -90,0 +91 @@ b\n+b\n" in unified_diff(head + tail, head + "b\n" + tail, context=0)
    assert "@@ -599,3 +599,4 @@ b\n b\n b\n b\n+b\n" in unified_diff(
        head + tail, head + "b\n" + tail
    )


@needs_git
@pytest.mark.parametrize("path", ["plain.txt", "with space.py", 'quote"d.txt', "back\\slash"])
def test_header_paths_match_git(git: Git, path: str) -> None:
    assert_same_as_git(git, "a\n", "b\n", path=path)
    assert_same_as_git(git, "a\n", "b\0\n", path=path)  # "Binary files …": no tab


def test_rejects_negative_context() -> None:
    with pytest.raises(ValueError):
        unified_diff("a", "b", context=-1)


# --- generated pairs ------------------------------------------------------------------------

LINE = st.sampled_from(
    ["a", "b", "c", "", "", "  x", "    y", "\tz", "}", "def f():", "x\r", "\x0c", " ", "a b", "é"]
)


@st.composite
def texts(draw: st.DrawFn, line: st.SearchStrategy[str] = LINE) -> str:
    lines = draw(st.lists(line, max_size=25))
    text = "\n".join(lines)
    return text + "\n" if lines and draw(st.booleans()) else text


@st.composite
def edited(draw: st.DrawFn, old: str, line: st.SearchStrategy[str] = LINE) -> str:
    """Insert, delete and replace runs of lines (which may add or drop the final newline)."""
    lines = old.split("\n")
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(lines)))
        cut = draw(st.integers(0, 3))
        lines[at : at + cut] = draw(st.lists(line, max_size=3))
    return "\n".join(lines)


@st.composite
def pairs(draw: st.DrawFn, line: st.SearchStrategy[str] = LINE) -> tuple[str, str]:
    old = draw(texts(line))
    new = draw(st.one_of(texts(line), edited(old, line)))
    return old, new


@needs_git
@settings(max_examples=300, deadline=None)
@given(pair=pairs(), context=st.sampled_from([0, 1, 3, 3]))
def test_generated_pairs_match_git(git: Git, pair: tuple[str, str], context: int) -> None:
    assert_same_as_git(git, *pair, context=context)


ANY_LINE = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00\n"),
    max_size=90,
)


@needs_git
@settings(max_examples=80, deadline=None)
@given(pair=pairs(st.one_of(LINE, ANY_LINE)))
def test_generated_unicode_pairs_match_git(git: Git, pair: tuple[str, str]) -> None:
    assert_same_as_git(git, *pair)


# --- realistic corpus: real source files, realistic edits -----------------------------------

Edit = Callable[[random.Random, list[str]], list[str]]


def insert_function(rng: random.Random, lines: list[str]) -> list[str]:
    at = rng.randrange(len(lines) + 1)
    name = f"helper_{rng.randrange(100)}"
    body = [f"def {name}(value):\n", "    if value is None:\n", "        return None\n"]
    return [*lines[:at], *body, "    return value * 2\n", "\n", "\n", *lines[at:]]


def delete_block(rng: random.Random, lines: list[str]) -> list[str]:
    at = rng.randrange(len(lines))
    return lines[:at] + lines[at + rng.randint(1, 25) :]


def rename_variable(rng: random.Random, lines: list[str]) -> list[str]:
    at = rng.randrange(len(lines))
    words = re.findall(r"\b[a-z_][a-z0-9_]{2,}\b", "".join(lines[at : at + 60]))
    if not words:
        return [*lines[:at], "# nothing to rename\n", *lines[at:]]
    word = rng.choice(words)
    pattern = re.compile(rf"\b{word}\b")
    return [
        pattern.sub(word + "_new", line) if at <= i < at + 120 else line
        for i, line in enumerate(lines)
    ]


def move_block(rng: random.Random, lines: list[str]) -> list[str]:
    at = rng.randrange(len(lines))
    block = lines[at : at + rng.randint(2, 20)]
    rest = lines[:at] + lines[at + len(block) :]
    to = rng.randrange(len(rest) + 1)
    return rest[:to] + block + rest[to:]


def change_indentation(rng: random.Random, lines: list[str]) -> list[str]:
    at = rng.randrange(len(lines))
    stop = at + rng.randint(2, 15)
    wrap = ["try:\n"] if rng.random() < 0.5 else []
    indented = ["    " + line if line.strip() else line for line in lines[at:stop]]
    return lines[:at] + wrap + indented + lines[stop:]


def reorder_imports(rng: random.Random, lines: list[str]) -> list[str]:
    imports = [i for i, line in enumerate(lines) if line.startswith(("import ", "from "))]
    if len(imports) < 2:
        return ["import os\n", *lines]
    chosen = [lines[i] for i in imports]
    rng.shuffle(chosen)
    out = list(lines)
    for i, line in zip(imports, chosen, strict=True):
        out[i] = line
    return out


def scattered_edits(rng: random.Random, lines: list[str]) -> list[str]:
    """Several small edits: changed lines, added blank lines and duplicated lines."""
    out = list(lines)
    for _ in range(rng.randint(2, 8)):
        at = rng.randrange(len(out))
        choice = rng.random()
        if choice < 0.4:
            out[at] = out[at].rstrip("\n") + "  # changed\n"
        elif choice < 0.7:
            out.insert(at, "\n")
        else:
            out[at:at] = out[at : at + rng.randint(1, 4)]
    return out


def mixed(rng: random.Random, lines: list[str]) -> list[str]:
    for _ in range(rng.randint(2, 5)):
        lines = rng.choice(EDITS[:-1])(rng, lines)
    return lines


EDITS: list[Edit] = [
    insert_function,
    delete_block,
    rename_variable,
    move_block,
    change_indentation,
    reorder_imports,
    scattered_edits,
    mixed,
]
PAIRS_PER_EDIT = 30


def stdlib_sources() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.stat().st_size > 2000)


def realistic_pairs(edit: Edit) -> Iterator[tuple[str, str, str, int]]:
    """(name, old, new, context) for PAIRS_PER_EDIT seeded edits of stdlib files."""
    rng = random.Random(f"diff-corpus-{edit.__name__}")
    sources = stdlib_sources()
    for _ in range(PAIRS_PER_EDIT):
        source = rng.choice(sources)
        lines = source.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        start = rng.randrange(max(1, len(lines) - 1500))
        old_lines = lines[start : start + 1500]
        new = "".join(edit(rng, old_lines))
        yield source.name, "".join(old_lines), new, rng.choice([3, 3, 3, 0, 1, 5])


@needs_git
@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_realistic_edits_match_git(git: Git, edit: Edit) -> None:
    if len(stdlib_sources()) < 20:
        pytest.skip("the Python standard library sources are not available")
    mismatches = [
        f"{name} (-U{context})"
        for name, old, new, context in realistic_pairs(edit)
        if unified_diff(old, new, name, context) != git.diff(old, new, name, context)
    ]
    identical = PAIRS_PER_EDIT - len(mismatches)
    assert not mismatches, f"{identical}/{PAIRS_PER_EDIT} identical to git; differ: {mismatches}"


@needs_git
def test_huge_files_take_the_snake_shortcut_like_git(
    git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ~65k kept lines the cost limit doubles and xdiff's snake heuristic kicks in."""
    rng = random.Random(7)
    old = [f"line {rng.randrange(200)}\n" for _ in range(40_000)]
    new = list(old)
    for _ in range(8_000):
        at = rng.randrange(len(new))
        new[at : at + rng.randint(0, 4)] = [f"new {rng.randrange(200)}\n"] * rng.randint(0, 3)
    taken = []
    original = diffing._Search._snake_split

    def spy(self: diffing._Search, *args: Any) -> Any:
        taken.append(result := original(self, *args))
        return result

    monkeypatch.setattr(diffing._Search, "_snake_split", spy)
    assert_same_as_git(git, "".join(old), "".join(new))
    assert any(taken)


# --- normalize_diff -------------------------------------------------------------------------

GIT_OUTPUT = "\n".join(
    [
        "diff --git a/app.py b/app.py",
        "index 3b18e51..a2c4f7e 100644",
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,5 +1,5 @@ import os",
        " import os",
        " ",
        "-def main():",
        "+def main(argv):",
        "     run()",
        "",
    ]
)


def test_normalize_strips_headers_and_hunk_numbers() -> None:
    assert normalize_diff(GIT_OUTPUT) == (
        "@@ ... @@\n import os\n \n-def main():\n+def main(argv):\n     run()\n"
    )


def test_normalize_keeps_header_lookalikes_inside_hunks() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- dashes\n+++ pluses\n-a\n+b\n"
    assert normalize_diff(diff) == "@@ ... @@\n--- dashes\n+++ pluses\n-a\n+b\n"


def test_normalize_handles_every_file_section() -> None:
    two_files = GIT_OUTPUT + GIT_OUTPUT.replace("app.py", "lib.py")
    two_files += "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
    body = "@@ ... @@\n import os\n \n-def main():\n+def main(argv):\n     run()\n"
    assert normalize_diff(two_files) == body + body


def test_normalize_line_endings_and_idempotence() -> None:
    crlf = GIT_OUTPUT.replace("\n", "\r\n")
    assert normalize_diff(crlf) == normalize_diff(GIT_OUTPUT)
    assert normalize_diff("@@ -3 +3 @@\r-a\r+b\r") == "@@ ... @@\n-a\n+b\n"
    once = normalize_diff(GIT_OUTPUT)
    assert normalize_diff(once) == once
    assert normalize_diff("") == ""


def test_normalized_hunk_runs_to_next_file() -> None:
    diff = "@@ ... @@\n-x\n--- y\ndiff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-p\n+q\n"
    assert normalize_diff(diff) == "@@ ... @@\n-x\n--- y\n@@ ... @@\n-p\n+q\n"


# --- match_diff -----------------------------------------------------------------------------

OLD = "".join(f"line {i}\n" for i in range(1, 21))
NEW = OLD.replace("line 5\n", "line five\n").replace("line 15\n", "line fifteen\n")
ACTUAL = unified_diff(OLD, NEW, "notes.txt")


def test_match_hunk_without_context() -> None:
    result = match_diff(ACTUAL, "@@ ... @@\n-line 5\n+line five\n")
    assert result.passed, result.message


def test_match_hunk_pasted_from_git() -> None:
    pasted = "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n"
    pasted += " line 7\n line 8\n"
    assert match_diff(ACTUAL, pasted).passed
    assert match_diff(ACTUAL, "--- a/notes.txt\n+++ b/notes.txt\n" + pasted).passed


@pytest.mark.parametrize("before", ["", "\n", "  \n\n"])
@pytest.mark.parametrize("after", ["", "\n", "\n\n  \n", "\n   ", "\r\n"])
def test_match_ignores_blank_edges(before: str, after: str) -> None:
    expected = before + "@@ ... @@\n-line 15\n+line fifteen" + after
    assert match_diff(ACTUAL, expected).passed
    assert match_diff(ACTUAL, before + ACTUAL + after, mode="exact").passed


def test_match_every_expected_hunk() -> None:
    both = "@@ ... @@\n-line 5\n+line five\n@@ ... @@\n-line 15\n+line fifteen\n"
    assert match_diff(ACTUAL, both).passed
    result = match_diff(ACTUAL, both.replace("fifteen", "15!"))
    assert not result.passed
    assert "hunk 2 of 2" in result.message
    assert "+line 15!" in result.message


def test_match_requires_hunk_within_one_actual_hunk() -> None:
    spanning = "@@ ... @@\n+line five\n line 6\n line 7\n line 8\n-line 15\n"
    assert not match_diff(ACTUAL, spanning).passed


def test_match_without_hunk_marker_is_one_hunk() -> None:
    assert match_diff(ACTUAL, "-line 5\n+line five\n line 6\n").passed
    assert not match_diff(ACTUAL, "-line 5\n+line 5\n").passed


def test_exact_mode() -> None:
    assert match_diff(ACTUAL, ACTUAL, mode="exact").passed
    assert match_diff(ACTUAL, ACTUAL.rstrip("\n"), mode="exact").passed
    renumbered = ACTUAL.replace("@@ -2,7 +2,7 @@", "@@ -1 +1 @@")
    assert match_diff(ACTUAL, renumbered, mode="exact").passed
    one_hunk = "@@ ... @@\n-line 5\n+line five\n"
    assert match_diff(ACTUAL, one_hunk).passed
    assert not match_diff(ACTUAL, one_hunk, mode="exact").passed
    assert match_diff("", "", mode="exact").passed
    assert not match_diff(ACTUAL, "", mode="exact").passed


def test_no_changes_and_empty_expectation() -> None:
    result = match_diff("", "@@ ... @@\n-a\n+b\n")
    assert not result.passed
    assert "no changes" in result.message
    assert "no changes" in match_diff("", "-a\n", mode="exact").message
    assert match_diff(ACTUAL, " \n").message == "expectedDiff is empty"
    assert not match_diff(ACTUAL, "").passed


def test_failure_preview_is_truncated() -> None:
    big_old = "".join(f"row {i}\n" for i in range(400))
    big = unified_diff(big_old, big_old.replace("row", "ROW"))
    message = match_diff(big, "@@ ... @@\n-absent\n").message
    assert "hunk 1 of 1" in message
    assert big[:2500] in message
    assert big[:2501] not in message
    assert f"… ({len(big) - 2500} more characters)" in message
    short = match_diff(ACTUAL, "-absent\n").message
    assert ACTUAL in short
    assert "more characters" not in short


@settings(max_examples=150, deadline=None)
@given(pair=pairs(), context=st.sampled_from([0, 1, 3]))
def test_every_hunk_matches_its_own_diff(pair: tuple[str, str], context: int) -> None:
    actual = unified_diff(*pair, context=context)
    hunks = ["@@" + part for part in actual.split("\n@@")[1:]]
    for hunk in hunks:
        assert match_diff(actual, hunk).passed
        body = hunk.split("\n")
        plus = [i for i, line in enumerate(body) if line.startswith("+")]
        if plus:
            body[plus[0]] = "+\x00 not in any generated line"
            assert not match_diff(actual, "\n".join(body)).passed


def test_match_keeps_blank_context_of_the_last_actual_hunk() -> None:
    old = "a\nb\nc\n\n"
    actual = unified_diff(old, "a\nB\nc\n\n")
    assert actual.endswith(" c\n \n")
    expected = "@@ ... @@\n-b\n+B\n c\n \n@@ ... @@\n a\n-b\n"
    assert match_diff(actual, expected).passed


def test_exact_failure_points_at_first_difference() -> None:
    message = match_diff(ACTUAL, ACTUAL.replace("+line five", "+line 5!"), mode="exact").message
    assert "expected '+line 5!', got '+line five'" in message


def test_normalize_drops_rename_headers() -> None:
    diff = "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n"
    diff += "index 1..2 100644\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n--- q\n+b\n"
    assert normalize_diff(diff) == "@@ ... @@\n--- q\n+b\n"


def test_match_accepts_blank_context_lines_whose_space_was_stripped() -> None:
    old = "def f():\n    a = 1\n\n    return a\n"
    new = "def f():\n    a = 2\n\n    return a\n"
    actual = unified_diff(old, new, "f.py")
    assert " \n" in actual  # git writes the empty context line as a lone space
    stripped = "@@ ... @@\n def f():\n-    a = 1\n+    a = 2\n\n     return a\n"
    assert match_diff(actual, stripped).passed
    assert match_diff(actual, stripped.replace("a = 2", "a = 3")).passed is False
    assert match_diff(actual, actual.replace(" \n", "\n"), mode="exact").passed


def test_match_accepts_any_substring_of_the_normalised_diff_as_seed_000_says() -> None:
    old = "def div(a, b):\n    return a / b\n"
    new = "def div(a, b):\n    if b == 0:\n        raise ValueError('zero')\n    return a / b\n"
    actual = unified_diff(old, new, "calc.py")
    for fragment in (
        "+    if b == 0",  # part of a line
        "raise ValueError('zero')",
        "def div(a, b):\n+    if b == 0:\n",  # a context line without its leading space
        "@@ ... @@\r\n def div(a, b):\r\n+    if b == 0:",  # CRLF
    ):
        assert match_diff(actual, fragment).passed, fragment
    for absent in ("+    if b == 1", "raise TypeError", "-    return a / b"):
        result = match_diff(actual, absent)
        assert not result.passed and "not found in the actual diff" in result.message


def test_a_substring_keeps_its_final_line_break() -> None:
    """``+x = 30\\n`` must not match the line ``+x = 300,``: a changed hunk fails."""
    actual = unified_diff("a\ntimeout: 30,\nb\n", "a\ntimeout: 300,\nb\n", "c.yaml")
    assert match_diff(actual, "-timeout: 30,\n+timeout: 300,\n").passed
    assert not match_diff(actual, "-timeout: 30,\n+timeout: 30\n").passed
    assert not match_diff(actual, "@@ -1,3 +1,3 @@\n a\n-timeout: 30,\n+timeout: 30\n").passed
    assert match_diff(actual, "+timeout: 30").passed  # a fragment, as written: seed 000


@needs_git
@pytest.mark.parametrize(
    ("old", "new"),
    [(None, "x\ny\n"), ("x\ny\n", None), (None, "a\0b"), ("a\0b", None), (None, "")],
    ids=["new file", "deleted file", "new binary", "deleted binary", "new empty"],
)
def test_a_missing_side_is_dev_null_like_git(
    git: Git, old: str | None, new: str | None, tmp_path: Path
) -> None:
    sides = []
    for side, text in (("a", old), ("b", new)):
        if text is None:
            sides.append("/dev/null")
        else:
            (tmp_path / side).mkdir()
            (tmp_path / side / "f.txt").write_bytes(text.encode())
            sides.append(f"{side}/f.txt")
    cmd = [GIT or "git", "diff", "--no-index", "--no-color", "--src-prefix=", "--dst-prefix="]
    proc = subprocess.run([*cmd, *sides], cwd=tmp_path, env=git.env, capture_output=True)
    expected = "".join(
        line
        for line in proc.stdout.decode().splitlines(keepends=True)
        if not line.startswith(GIT_META)
    )
    assert unified_diff(old, new, "f.txt") == expected


GIT_SHOW = """commit 0123456789abcdef0123456789abcdef01234567
Author: Dev <dev@example.com>
Date:   Sun Nov 22 01:00:00 2026 +0000

    Fix the N+1 query

 src/db.js          | 2 +-
 src/routes/users.js | 4 ++--
 2 files changed, 3 insertions(+), 3 deletions(-)

diff --git a/src/db.js b/src/db.js
index 1111111..2222222 100644
--- a/src/db.js
+++ b/src/db.js
@@ -1,3 +1,3 @@
 export const db = {
-  slow: true,
+  slow: false,
 };
diff --git a/src/routes/users.js b/src/routes/users.js
index 3333333..4444444 100644
--- a/src/routes/users.js
+++ b/src/routes/users.js
@@ -1,4 +1,4 @@
 export function users(db) {
-  return ids.map((id) => db.getPostsForUser(id));
+  return db.getPostsForUsers(ids);
 }
 // end
"""
GIT_SHOW += "-- \n2.39.5\n\n"  # format-patch's signature
USERS_OLD = (
    "export function users(db) {\n  return ids.map((id) => db.getPostsForUser(id));\n}\n// end\n"
)
USERS_NEW = USERS_OLD.replace("ids.map((id) => db.getPostsForUser(id))", "db.getPostsForUsers(ids)")


@pytest.mark.parametrize("path", ["src/routes/users.js", "routes/users.js", "users.js"])
def test_a_multi_file_git_show_is_cut_to_the_section_about_the_path(path: str) -> None:
    actual = unified_diff(USERS_OLD, USERS_NEW, path)
    assert match_diff(actual, GIT_SHOW, path=path).passed
    assert not match_diff(actual, GIT_SHOW).passed  # without the path: every file's hunks
    changed = GIT_SHOW.replace("+  return db.getPostsForUsers(ids);", "+  return db.all();")
    assert not match_diff(actual, changed, path=path).passed
    patch = GIT_SHOW[GIT_SHOW.index("diff --git") :]  # format-patch: no commit header
    assert match_diff(actual, patch, path=path).passed
    assert match_diff(actual, patch, "exact", path=path).passed


def test_trailing_whitespace_an_editor_stripped_does_not_matter() -> None:
    old = "def f():\n    a = 1\n    \n    return a\n"
    new = "def f():\n    a = 2\n    \n    return a\n"
    actual = unified_diff(old, new, "f.py")
    assert "\n     \n" in actual  # the indented blank line, as context
    stripped = "@@ ... @@\n def f():\n-    a = 1\n+    a = 2\n\n     return a\n"
    assert match_diff(actual, stripped).passed
    assert not match_diff(actual, stripped.replace("a = 2", "a = 3")).passed


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # the last line of a multi-line expectation is a whole line, with or without "\n"
        ("timeout = 1\n", "timeout = 10\n", "-timeout = 1\n+timeout = 1"),
        # and so is the first: not the tail of a changed line
        (
            "def f():\n    return total\n",
            "def f():\n        return total\n# done\n",
            " return total\n+# done\n",
        ),
        # a whitespace cleanup expected with its whitespace is matched exactly
        ("x = 1   \ny = 2\n", "x = 1 \ny = 2\n", "-x = 1   \n+x = 1\n"),
    ],
    ids=["longer last line", "suffix of the first line", "whitespace cleanup"],
)
def test_no_false_pass_for_a_hunk_that_differs_from_the_change(
    old: str, new: str, expected: str
) -> None:
    assert not match_diff(unified_diff(old, new, "f.py"), expected).passed


@needs_git
def test_sections_of_a_real_multi_file_git_diff_are_found_by_path(git: Git, tmp_path: Path) -> None:
    """Default git settings: core.quotepath quotes café.py, a space stays unquoted."""
    files = {
        "y z.py": ("a = 1\n", "a = 2\n"),
        "café.py": ("b = 1\n", "b = 2\n"),
        "src/index.ts": ("export const c = 1;\n", "export const c = 2;\n"),
        "test/index.ts": ("it('c', () => 1);\n", "it('c', () => 2);\n"),
    }
    repo = tmp_path / "repo"
    run = lambda *args: subprocess.run(  # noqa: E731
        [GIT or "git", *args], cwd=repo, env=git.env, capture_output=True, check=True
    ).stdout.decode()
    repo.mkdir()
    run("init", "-q")
    for name, (old, _) in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(old)
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    for name, (_, new) in files.items():
        (repo / name).write_text(new)
    whole = run("diff")
    assert '"a/caf\\303\\251.py"' in whole  # quoted by git
    for name, (old, new) in files.items():
        actual = unified_diff(old, new, name)
        assert match_diff(actual, whole, path=name).passed, name
        assert match_diff(actual, whole, "exact", path=name).passed, name
    assert (
        match_diff(unified_diff(*files["src/index.ts"], "index.ts"), whole, path="index.ts").passed
        is False
    )


def test_a_path_is_told_apart_from_the_a_b_labels_and_mnemonic_prefixes() -> None:
    def section(label_old: str, label_new: str, old: str, new: str) -> str:
        return (
            f"diff --git {label_old} {label_new}\nindex 1..2 100644\n--- {label_old}\n"
            f"+++ {label_new}\n@@ -1 +1 @@\n-{old}\n+{new}\n"
        )

    whole = section("a/foo.py", "b/foo.py", "v = 1", "v = 2") + section(
        "a/a/foo.py", "b/a/foo.py", "w = 1", "w = 2"
    )
    nested = unified_diff("w = 1\n", "w = 2\n", "a/foo.py")
    assert match_diff(nested, whole, "exact", path="a/foo.py").passed
    top = unified_diff("v = 1\n", "v = 2\n", "foo.py")
    assert match_diff(top, whole, "exact", path="foo.py").passed
    mnemonic = section("i/foo.py", "w/foo.py", "v = 1", "v = 2") + section(
        "i/bar.py", "w/bar.py", "x = 1", "x = 2"
    )
    assert match_diff(top, mnemonic, "exact", path="foo.py").passed
    bad_escape = '--- "a/x\\777.py"\n'  # not a byte: kept as written, no error
    assert not match_diff(top, "diff --git a/x b/x\n" + bad_escape, path="foo.py").passed
