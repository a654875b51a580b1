"""Unified diffs byte-identical to ``git diff --no-index``, and the ``diff-match`` helpers.

Plain Myers finds *a* shortest edit script, but git's xdiff picks a particular one: it
trims the common ends, discards lines that cannot match, cuts expensive searches short
and then slides change groups (indent heuristic).  Expected diffs in datasets are pasted
from git, so every one of those steps is reproduced here to get the very same hunks.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal, NamedTuple

# xdiff's tuning constants (xdiffi.c / xprepare.c); changing any of them changes output.
SNAKE_CNT = 20
K_HEUR = 4
HEUR_MIN_COST = 256
MAX_COST_MIN = 256
MAX_EQLIMIT = 1024
SIMSCAN_WINDOW = 100
KPDIS_RUN = 4
LINE_MAX = 2**63 - 1
MAX_INDENT = 200
MAX_BLANKS = 20
INDENT_HEURISTIC_MAX_SLIDING = 100
INDENT_WEIGHT = 60
FUNC_NAME_BYTES = 80


class _Change(NamedTuple):
    """``n1`` old lines at ``i1`` replaced by ``n2`` new lines at ``i2`` (0-based)."""

    i1: int
    i2: int
    n1: int
    n2: int


def unified_diff(old: str, new: str, path: str = "file.txt", context: int = 3) -> str:
    """Return what ``git diff --no-index -U<context>`` prints from the ``---`` line on."""
    if context < 0:
        raise ValueError("context must be >= 0")
    if old == new:
        return ""
    a, b = _lines(old), _lines(new)
    if context == 0:
        # git trims the common tail before xdiff runs when no context is wanted.
        tail = _common_tail_lines(old.encode(), new.encode())
        a, b = a[: len(a) - tail], b[: len(b) - tail]
    header = f"--- {_label('a/', path)}\n+++ {_label('b/', path)}\n"
    return header + "".join(_hunks(a, b, _diff(a, b), context))


def _lines(text: str) -> list[str]:
    """Split after ``\\n`` only (git's records keep their newline; ``\\r`` is content)."""
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()[:-1]
    if last:
        lines.append(last)
    return lines


def _common_tail_lines(old: bytes, new: bytes) -> int:
    """Count the whole lines that git's ``trim_common_tail`` (1 KiB blocks) drops."""
    block, trimmed = 1024, 0
    while trimmed + block <= min(len(old), len(new)) and (
        old[len(old) - trimmed - block : len(old) - trimmed]
        == new[len(new) - trimmed - block : len(new) - trimmed]
    ):
        trimmed += block
    tail = old[len(old) - trimmed :]
    newline = tail.find(b"\n")
    if newline < 0:
        return 0
    dropped = tail[newline + 1 :]
    return dropped.count(b"\n") + (not dropped.endswith(b"\n") and bool(dropped))


_C_ESCAPES = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r"}
_C_ESCAPES |= {'"': '"', "\\": "\\"}


def _label(prefix: str, path: str) -> str:
    """Quote like git (core.quotepath=off); git appends a tab when the name has a space."""
    name = prefix + path
    if any(c in _C_ESCAPES or c < " " or c == "\x7f" for c in name):
        name = '"' + "".join(_quote_char(c) for c in name) + '"'
    return name + ("\t" if " " in path else "")


def _quote_char(c: str) -> str:
    if c in _C_ESCAPES:
        return "\\" + _C_ESCAPES[c]
    return f"\\{ord(c):03o}" if c < " " or c == "\x7f" else c


# --- the edit script ---------------------------------------------------------------------


def _diff(a: list[str], b: list[str]) -> list[_Change]:
    """xdl_diff: mark changed lines, compact both sides, then collect the changes."""
    table: dict[str, int] = {}
    ids_a = [table.setdefault(line, len(table)) for line in a]
    ids_b = [table.setdefault(line, len(table)) for line in b]
    # One spare False at the end: it is both changed[n] and (via index -1) changed[-1].
    changed_a, changed_b = [False] * (len(a) + 1), [False] * (len(b) + 1)
    _mark_changes(ids_a, ids_b, changed_a, changed_b)
    _compact(_Groups(ids_a, changed_a), _Groups(ids_b, changed_b), a)
    _compact(_Groups(ids_b, changed_b), _Groups(ids_a, changed_a), b)
    return _changes(changed_a, changed_b, len(a), len(b))


def _bogosqrt(n: int) -> int:
    """xdiff's power-of-two square root estimate."""
    root = 1
    while n > 0:
        n >>= 2
        root <<= 1
    return root


def _mark_changes(ids_a: list[int], ids_b: list[int], ch_a: list[bool], ch_b: list[bool]) -> None:
    """Trim common ends, discard hopeless lines, then run the divide-and-conquer search."""
    limit = min(len(ids_a), len(ids_b))
    head = 0
    while head < limit and ids_a[head] == ids_b[head]:
        head += 1
    tail = 0
    while tail < limit - head and ids_a[-1 - tail] == ids_b[-1 - tail]:
        tail += 1
    keep_a = _kept_lines(ids_a, head, len(ids_a) - tail, Counter(ids_b), ch_a)
    keep_b = _kept_lines(ids_b, head, len(ids_b) - tail, Counter(ids_a), ch_b)
    _compare(keep_a, keep_b, ids_a, ids_b, ch_a, ch_b)


def _kept_lines(
    ids: list[int], lo: int, hi: int, other: Counter[int], changed: list[bool]
) -> list[int]:
    """xdl_cleanup_records: lines without a match (or frequent ones amid such) are changed."""
    frequent = min(_bogosqrt(len(ids)), MAX_EQLIMIT)
    matches = (other[x] for x in ids[lo:hi])
    kinds = [0 if n == 0 else 2 if n >= frequent else 1 for n in matches]
    kept = []
    for j, kind in enumerate(kinds):
        if kind == 1 or (kind == 2 and not _in_discard_run(kinds, j)):
            kept.append(lo + j)
        else:
            changed[lo + j] = True
    return kept


def _in_discard_run(kinds: list[int], i: int) -> bool:
    """xdl_clean_mmatch: is this frequent line surrounded mostly by unmatched lines?"""
    start, end = max(0, i - SIMSCAN_WINDOW), min(len(kinds) - 1, i + SIMSCAN_WINDOW)
    unmatched, frequent = 0, 2  # git counts the line itself once for each side
    for side in (range(i - 1, start - 1, -1), range(i + 1, end + 1)):
        side_unmatched = 0
        for j in side:
            if kinds[j] == 1:
                break
            side_unmatched += kinds[j] == 0
            frequent += kinds[j] == 2
        if not side_unmatched:
            return False
        unmatched += side_unmatched
    return frequent * KPDIS_RUN < frequent + unmatched


def _compare(
    keep_a: list[int],
    keep_b: list[int],
    ids_a: list[int],
    ids_b: list[int],
    ch_a: list[bool],
    ch_b: list[bool],
) -> None:
    """xdl_recs_cmp over the kept lines, with an explicit stack instead of recursion."""
    a, b = [ids_a[i] for i in keep_a], [ids_b[i] for i in keep_b]
    ndiags = len(a) + len(b) + 3
    # Diagonals run from -(len(b) + 1) to len(a) + 1: negative indexes wrap without clashing.
    kvdf, kvdb = [0] * ndiags, [0] * ndiags
    max_cost = max(_bogosqrt(ndiags), MAX_COST_MIN)
    boxes = [(0, len(a), 0, len(b), False)]
    while boxes:
        off1, lim1, off2, lim2, need_min = boxes.pop()
        while off1 < lim1 and off2 < lim2 and a[off1] == b[off2]:
            off1, off2 = off1 + 1, off2 + 1
        while off1 < lim1 and off2 < lim2 and a[lim1 - 1] == b[lim2 - 1]:
            lim1, lim2 = lim1 - 1, lim2 - 1
        if off1 == lim1:
            for i in keep_b[off2:lim2]:
                ch_b[i] = True
        elif off2 == lim2:
            for i in keep_a[off1:lim1]:
                ch_a[i] = True
        else:
            box = (off1, lim1, off2, lim2)
            i1, i2, min_lo, min_hi = _split(a, b, box, kvdf, kvdb, need_min, max_cost)
            boxes.append((i1, lim1, i2, lim2, min_hi))
            boxes.append((off1, i1, off2, i2, min_lo))


_Split = tuple[int, int, bool, bool]


def _split(
    a: list[int],
    b: list[int],
    box: tuple[int, int, int, int],
    kvdf: list[int],
    kvdb: list[int],
    need_min: bool,
    max_cost: int,
) -> _Split:
    """xdl_split: meet in the middle, or give up on optimality once the search gets costly."""
    off1, lim1, off2, lim2 = box
    dmin, dmax = off1 - lim2, lim1 - off2
    fmid, bmid = off1 - off2, lim1 - lim2
    odd = (fmid - bmid) & 1
    fmin = fmax = fmid
    bmin = bmax = bmid
    kvdf[fmid], kvdb[bmid] = off1, lim1
    cost = 0
    while True:
        cost += 1
        got_snake = False
        if fmin > dmin:
            fmin -= 1
            kvdf[fmin - 1] = -1
        else:
            fmin += 1
        if fmax < dmax:
            fmax += 1
            kvdf[fmax + 1] = -1
        else:
            fmax -= 1
        for d in range(fmax, fmin - 1, -2):
            i1 = kvdf[d - 1] + 1 if kvdf[d - 1] >= kvdf[d + 1] else kvdf[d + 1]
            start, i2 = i1, i1 - d
            while i1 < lim1 and i2 < lim2 and a[i1] == b[i2]:
                i1, i2 = i1 + 1, i2 + 1
            got_snake |= i1 - start > SNAKE_CNT
            kvdf[d] = i1
            if odd and bmin <= d <= bmax and kvdb[d] <= i1:
                return i1, i2, True, True

        if bmin > dmin:
            bmin -= 1
            kvdb[bmin - 1] = LINE_MAX
        else:
            bmin += 1
        if bmax < dmax:
            bmax += 1
            kvdb[bmax + 1] = LINE_MAX
        else:
            bmax -= 1
        for d in range(bmax, bmin - 1, -2):
            i1 = kvdb[d - 1] if kvdb[d - 1] < kvdb[d + 1] else kvdb[d + 1] - 1
            start, i2 = i1, i1 - d
            while i1 > off1 and i2 > off2 and a[i1 - 1] == b[i2 - 1]:
                i1, i2 = i1 - 1, i2 - 1
            got_snake |= start - i1 > SNAKE_CNT
            kvdb[d] = i1
            if not odd and fmin <= d <= fmax and i1 <= kvdf[d]:
                return i1, i2, True, True

        if need_min:
            continue
        if got_snake and cost > HEUR_MIN_COST:
            spl = _snake_split(a, b, box, kvdf, (fmin, fmax, fmid), kvdb, (bmin, bmax, bmid), cost)
            if spl:
                return spl
        if cost >= max_cost:
            return _furthest_split(box, kvdf, (fmin, fmax), kvdb, (bmin, bmax))


def _snake_split(
    a: list[int],
    b: list[int],
    box: tuple[int, int, int, int],
    kvdf: list[int],
    fwd: tuple[int, int, int],
    kvdb: list[int],
    bwd: tuple[int, int, int],
    cost: int,
) -> _Split | None:
    """Settle for a far-reaching diagonal that ends in a snake of SNAKE_CNT equal lines."""
    off1, lim1, off2, lim2 = box
    fmin, fmax, fmid = fwd
    best = 0
    spl: _Split | None = None
    for d in range(fmax, fmin - 1, -2):
        i1 = kvdf[d]
        i2 = i1 - d
        v = (i1 - off1) + (i2 - off2) - abs(d - fmid)
        if (
            v > K_HEUR * cost
            and v > best
            and off1 + SNAKE_CNT <= i1 < lim1
            and off2 + SNAKE_CNT <= i2 < lim2
            and all(a[i1 - k] == b[i2 - k] for k in range(1, SNAKE_CNT + 1))
        ):
            best, spl = v, (i1, i2, True, False)
    if spl:
        return spl
    bmin, bmax, bmid = bwd
    best = 0
    for d in range(bmax, bmin - 1, -2):
        i1 = kvdb[d]
        i2 = i1 - d
        v = (lim1 - i1) + (lim2 - i2) - abs(d - bmid)
        if (
            v > K_HEUR * cost
            and v > best
            and off1 < i1 <= lim1 - SNAKE_CNT
            and off2 < i2 <= lim2 - SNAKE_CNT
            and all(a[i1 + k] == b[i2 + k] for k in range(SNAKE_CNT))
        ):
            best, spl = v, (i1, i2, False, True)
    return spl


def _furthest_split(
    box: tuple[int, int, int, int],
    kvdf: list[int],
    fwd: tuple[int, int],
    kvdb: list[int],
    bwd: tuple[int, int],
) -> _Split:
    """Cost cut-off: split at whichever path (forward or backward) got furthest."""
    off1, lim1, off2, lim2 = box
    fbest = fbest1 = -1
    for d in range(fwd[1], fwd[0] - 1, -2):
        i1 = min(kvdf[d], lim1)
        i2 = i1 - d
        if lim2 < i2:
            i1, i2 = lim2 + d, lim2
        if fbest < i1 + i2:
            fbest, fbest1 = i1 + i2, i1
    bbest = bbest1 = LINE_MAX
    for d in range(bwd[1], bwd[0] - 1, -2):
        i1 = max(off1, kvdb[d])
        i2 = i1 - d
        if i2 < off2:
            i1, i2 = off2 + d, off2
        if i1 + i2 < bbest:
            bbest, bbest1 = i1 + i2, i1
    if (lim1 + lim2) - bbest < fbest - (off1 + off2):
        return fbest1, fbest - fbest1, True, False
    return bbest1, bbest - bbest1, False, True


# --- sliding change groups (xdl_change_compact) -------------------------------------------


class _Groups:
    """Cursor over one file's runs of changed lines; empty runs sit between unchanged lines."""

    def __init__(self, ids: list[int], changed: list[bool]) -> None:
        self.ids, self.changed = ids, changed
        self.start = self.end = 0
        while changed[self.end]:
            self.end += 1

    def next(self) -> bool:
        if self.end == len(self.ids):
            return False
        self.start = self.end = self.end + 1
        while self.changed[self.end]:
            self.end += 1
        return True

    def previous(self) -> bool:
        if self.start == 0:
            return False
        self.start = self.end = self.start - 1
        while self.changed[self.start - 1]:
            self.start -= 1
        return True

    def slide_down(self) -> bool:
        """Move the run one line down (possible when its first line equals the next one)."""
        if self.end == len(self.ids) or self.ids[self.start] != self.ids[self.end]:
            return False
        self.changed[self.start], self.changed[self.end] = False, True
        self.start, self.end = self.start + 1, self.end + 1
        while self.changed[self.end]:
            self.end += 1
        return True

    def slide_up(self) -> bool:
        if self.start == 0 or self.ids[self.start - 1] != self.ids[self.end - 1]:
            return False
        self.start, self.end = self.start - 1, self.end - 1
        self.changed[self.start], self.changed[self.end] = True, False
        while self.changed[self.start - 1]:
            self.start -= 1
        return True


def _compact(g: _Groups, other: _Groups, lines: list[str]) -> None:
    """Slide each group as far as it goes, merging neighbours, then settle it where git does."""
    while True:
        if g.end != g.start:
            earliest_end, aligned_end = _slide_through(g, other)
            if g.end == earliest_end:
                pass
            elif aligned_end != -1:
                # Prefer lining up with a change on the other side (a modification).
                while other.end == other.start:
                    g.slide_up()
                    other.previous()
            else:
                best = _best_shift(lines, g.end, g.end - g.start, earliest_end)
                while g.end > best:
                    g.slide_up()
                    other.previous()
        if not g.next():
            return
        other.next()


def _slide_through(g: _Groups, other: _Groups) -> tuple[int, int]:
    """Slide to the top then the bottom until the group stops growing.

    Returns the highest end reachable and the last end that faced a change in ``other``.
    """
    while True:
        size = g.end - g.start
        aligned_end = -1
        while g.slide_up():
            other.previous()
        earliest_end = g.end
        if other.end > other.start:
            aligned_end = g.end
        while g.slide_down():
            other.next()
            if other.end > other.start:
                aligned_end = g.end
        if size == g.end - g.start:
            return earliest_end, aligned_end


def _best_shift(lines: list[str], end: int, size: int, earliest_end: int) -> int:
    """Indent heuristic: the group end whose two split points read most naturally."""
    lowest = max(earliest_end, end - size - 1, end - INDENT_HEURISTIC_MAX_SLIDING)
    best_shift, best = -1, (0, 0)
    for shift in range(lowest, end + 1):
        top, bottom = _split_score(lines, shift - size), _split_score(lines, shift)
        score = (top[0] + bottom[0], top[1] + bottom[1])
        cmp_indent = (score[0] > best[0]) - (score[0] < best[0])
        if best_shift == -1 or INDENT_WEIGHT * cmp_indent + score[1] - best[1] <= 0:
            best_shift, best = shift, score
    return best_shift


def _indent(line: str) -> int:
    """Columns of indentation (tab = 8), or -1 for a blank line; git's isspace is \\t\\n\\r ."""
    width = 0
    for c in line:
        if c == " ":
            width += 1
        elif c == "\t":
            width += 8 - width % 8
        elif c not in "\r\n":
            return width
        if width >= MAX_INDENT:
            return MAX_INDENT
    return -1


def _nearest_indent(lines: list[str], indexes: range) -> tuple[int, int]:
    """(blank lines skipped, indent of the first non-blank line or -1)."""
    blanks = 0
    for i in indexes:
        indent = _indent(lines[i])
        if indent != -1:
            return blanks, indent
        blanks += 1
        if blanks == MAX_BLANKS:
            return blanks, 0
    return blanks, -1


def _split_score(lines: list[str], split: int) -> tuple[int, int]:
    """(effective indent, penalty) of cutting just above ``lines[split]``."""
    end_of_file = split >= len(lines)
    indent = -1 if end_of_file else _indent(lines[split])
    pre_blank, pre_indent = _nearest_indent(lines, range(split - 1, -1, -1))
    post_blank, post_indent = _nearest_indent(lines, range(split + 1, len(lines)))

    penalty = 0
    if pre_indent == -1 and pre_blank == 0:
        penalty += 1  # start of file
    if end_of_file:
        penalty += 21
    blank_after = 1 + post_blank if indent == -1 else 0
    total_blank = pre_blank + blank_after
    penalty += -30 * total_blank + 6 * blank_after
    if indent == -1:
        indent = post_indent
    blank = total_blank != 0
    if indent == -1 or pre_indent == -1 or indent == pre_indent:
        pass
    elif indent > pre_indent:
        penalty += 10 if blank else -4
    elif post_indent != -1 and post_indent > indent:
        penalty += 17 if blank else 24  # outdent that opens a new block
    else:
        penalty += 17 if blank else 23  # dedent that closes a block
    return indent, penalty


def _changes(ch_a: list[bool], ch_b: list[bool], n_a: int, n_b: int) -> list[_Change]:
    """Pair each run of changed old lines with the run of new lines at the same spot."""
    changes = []
    i1 = i2 = 0
    while i1 < n_a or i2 < n_b:
        if ch_a[i1] or ch_b[i2]:
            s1, s2 = i1, i2
            while ch_a[i1]:
                i1 += 1
            while ch_b[i2]:
                i2 += 1
            changes.append(_Change(s1, s2, i1 - s1, i2 - s2))
        else:
            i1, i2 = i1 + 1, i2 + 1
    return changes


# --- output -------------------------------------------------------------------------------


_FUNC_LINE = re.compile("[A-Za-z_$]")


class _FuncNames:
    """git's default funcname: last old line before the hunk starting with a letter, _ or $."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.searched_to = -1
        self.text = ""

    def before(self, start: int) -> str:
        for i in range(start - 1, self.searched_to, -1):
            if _FUNC_LINE.match(self.lines[i]):
                self.text = _func_text(self.lines[i])
                break
        self.searched_to = start - 1
        return " " + self.text if self.text else ""


def _func_text(line: str) -> str:
    """Cut to 80 bytes and strip like xdiff, then drop what git's UTF-8 check truncates."""
    text = line.encode()[:FUNC_NAME_BYTES].rstrip(b" \t\r\n").decode(errors="ignore")
    return re.split("[\ufffe\uffff]", text)[0]


def _hunks(a: list[str], b: list[str], changes: list[_Change], context: int) -> list[str]:
    """Merge changes no more than 2*context lines apart into hunks and render them."""
    out: list[str] = []
    names = _FuncNames(a)
    first = 0
    while first < len(changes):
        last = first
        while (
            last + 1 < len(changes)
            and changes[last + 1].i1 - (changes[last].i1 + changes[last].n1) <= 2 * context
        ):
            last += 1
        out += _hunk(a, b, changes[first : last + 1], context, names)
        first = last + 1
    return out


def _hunk(
    a: list[str], b: list[str], group: list[_Change], context: int, names: _FuncNames
) -> list[str]:
    head, tail = group[0], group[-1]
    s1, s2 = max(head.i1 - context, 0), max(head.i2 - context, 0)
    after = min(context, len(a) - tail.i1 - tail.n1, len(b) - tail.i2 - tail.n2)
    e1, e2 = tail.i1 + tail.n1 + after, tail.i2 + tail.n2 + after
    out = [f"@@ -{_range(s1, e1 - s1)} +{_range(s2, e2 - s2)} @@{names.before(s1)}\n"]
    pos = s1
    for change in group:
        out += [_record(" ", line) for line in a[pos : change.i1]]
        out += [_record("-", line) for line in a[change.i1 : change.i1 + change.n1]]
        out += [_record("+", line) for line in b[change.i2 : change.i2 + change.n2]]
        pos = change.i1 + change.n1
    out += [_record(" ", line) for line in a[pos:e1]]
    return out


def _range(start: int, count: int) -> str:
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _record(prefix: str, line: str) -> str:
    if line.endswith("\n"):
        return prefix + line
    return prefix + line + "\n\\ No newline at end of file\n"


# --- diff-match ---------------------------------------------------------------------------

HUNK_MARK = "@@ ... @@"
_HUNK_HEADER = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_FILE_HEADERS = (
    "diff ",
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "similarity index",
    "dissimilarity index",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
)
PREVIEW_CHARS = 2500


def normalize_diff(diff: str) -> str:
    """Canonical form for comparing diffs: ``\\n`` endings, no file headers, ``@@ ... @@``.

    File headers are only dropped between a section start and its first hunk: a hunk
    header's line counts tell where the hunk ends, so a removed ``-- x`` line (printed
    ``--- x``) is kept.  After an already-normalised ``@@ ... @@`` the hunk runs on until
    the next ``diff`` line.
    """
    out: list[str] = []
    owed: list[int] | None = None  # old/new lines the current hunk still has to show
    in_hunk = False
    lines = diff.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines[-1]:
        lines.pop()
    for line in lines:
        header = _HUNK_HEADER.match(line)
        if header or line.startswith(HUNK_MARK):
            out.append(HUNK_MARK)
            in_hunk = True
            owed = [int(n) if n else 1 for n in header.groups()] if header else None
        elif line.startswith("diff "):
            in_hunk = False
        elif in_hunk:
            out.append(line)
            if owed is not None:
                owed[0] -= line[:1] in (" ", "-", "")
                owed[1] -= line[:1] in (" ", "+", "")
                in_hunk = owed[0] > 0 or owed[1] > 0
        elif not line.startswith(_FILE_HEADERS):
            out.append(line)
    return "".join(line + "\n" for line in out)


@dataclass(frozen=True)
class DiffMatch:
    passed: bool
    message: str


def match_diff(
    actual_diff: str, expected_diff: str, mode: Literal["contains", "exact"] = "contains"
) -> DiffMatch:
    """Check an actual diff against an expected one.

    ``contains``: every expected hunk body must be a contiguous run inside one actual hunk
    (so it may carry less context and its ``@@`` numbers are ignored).  ``exact``: the
    normalised diffs are equal.  Blank lines around the expected block never matter.
    """
    expected = _strip_blank_edges(normalize_diff(expected_diff).split("\n")[:-1])
    actual = _strip_blank_edges(normalize_diff(actual_diff).split("\n")[:-1])
    if expected and not actual:
        return DiffMatch(
            False, f"no changes: the actual diff is empty, expected:\n{_head(expected)}"
        )
    if mode == "exact":
        if actual == expected:
            return DiffMatch(True, "diff matches exactly")
        return DiffMatch(False, f"diff differs from expectedDiff\n{_preview(actual_diff)}")
    if not expected:
        return DiffMatch(False, "expectedDiff is empty")
    hunks = _split_hunks(expected)
    bodies = _split_hunks(actual)
    for index, hunk in enumerate(hunks, 1):
        if not any(_has_run(body, hunk) for body in bodies):
            return DiffMatch(
                False,
                f"expected hunk {index} of {len(hunks)} not found in the actual diff:\n"
                f"{_head(hunk)}\n{_preview(actual_diff)}",
            )
    return DiffMatch(True, f"all {len(hunks)} expected hunk(s) found")


def _strip_blank_edges(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return lines[first:]


def _split_hunks(lines: list[str]) -> list[list[str]]:
    """Hunk bodies, split at ``@@ ... @@``; text before the first marker is a hunk too."""
    hunks: list[list[str]] = [] if lines[:1] == [HUNK_MARK] else [[]]
    for line in lines:
        if line == HUNK_MARK:
            hunks.append([])
        else:
            hunks[-1].append(line)
    return hunks


def _has_run(body: list[str], run: list[str]) -> bool:
    return any(body[i : i + len(run)] == run for i in range(len(body) - len(run) + 1))


def _head(lines: list[str], count: int = 5) -> str:
    more = f"\n  … ({len(lines) - count} more lines)" if len(lines) > count else ""
    return "\n".join("  " + line for line in lines[:count]) + more


def _preview(diff: str) -> str:
    """The actual diff for a failure message, cut at PREVIEW_CHARS characters."""
    if len(diff) <= PREVIEW_CHARS:
        return f"actual diff:\n{diff}"
    return f"actual diff:\n{diff[:PREVIEW_CHARS]}… ({len(diff) - PREVIEW_CHARS} more characters)"
