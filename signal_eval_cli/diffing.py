"""Unified diffs byte-identical to ``git diff --no-index``, and the ``diff-match`` helpers.

Plain Myers finds *a* shortest edit script, but git's xdiff picks a particular one: it
trims the common ends, discards lines that cannot match, cuts expensive searches short
and then slides change groups (indent heuristic).  Expected diffs in datasets are pasted
from git, so every one of those steps is reproduced here to get the very same hunks.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from itertools import compress, count, pairwise, repeat
from operator import not_
from typing import Literal

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


_Change = tuple[int, int, int, int]
"""(i1, i2, n1, n2): ``n1`` old lines at ``i1`` replaced by ``n2`` new lines at ``i2``
(0-based).  A plain tuple: a NamedTuple's constructor is a Python call per change."""


def unified_diff(old: str | None, new: str | None, path: str = "file.txt", context: int = 3) -> str:
    """What ``git diff --no-index -U<context>`` prints for old -> new, from ``---`` on.

    The labels are ``a/<path>`` and ``b/<path>``; a side that does not exist (``None``: a
    new or a deleted file) is ``/dev/null``, as git labels it.  Like git, a side with a NUL
    in its first 8,000 bytes makes the files binary: one ``Binary files … differ`` line
    instead of hunks.
    """
    if context < 0:
        raise ValueError("context must be >= 0")
    old_text, new_text = old or "", new or ""
    if old_text == new_text:
        return ""
    names = [
        _NO_FILE if old is None else quote_path("a/", path),
        _NO_FILE if new is None else quote_path("b/", path),
    ]
    if _is_binary(old_text) or _is_binary(new_text):
        return f"Binary files {names[0]} and {names[1]} differ\n"
    a, b = _lines(old_text), _lines(new_text)
    if context == 0:
        # git trims the common tail before xdiff runs when no context is wanted.
        tail = _common_tail_lines(old_text.encode(), new_text.encode())
        a, b = a[: len(a) - tail], b[: len(b) - tail]
    tab = "\t" if " " in path else ""  # git appends a tab to a name with a space
    labels = [name if name == _NO_FILE else name + tab for name in names]
    header = f"--- {labels[0]}\n+++ {labels[1]}\n"
    return header + "".join(_hunks(a, b, _diff(a, b), context))


_NO_FILE = "/dev/null"


_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines also splits at these


def _lines(text: str) -> list[str]:
    """Split after ``\\n`` only (git's records keep their newline; ``\\r`` is content)."""
    if not any(c in text for c in _OTHER_BREAKS):
        return text.splitlines(keepends=True)  # same result, faster
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


_C_ESCAPES = dict(zip('\a\b\t\n\v\f\r"\\', 'abtnvfr"\\', strict=True))


def quote_path(prefix: str, path: str) -> str:
    """Quote like git (core.quotepath=off)."""
    name = prefix + path
    if any(c in _C_ESCAPES or c < " " or c == "\x7f" for c in name):
        name = '"' + "".join(_quote_char(c) for c in name) + '"'
    return name


BINARY_SNIFF_BYTES = 8000
"""git's FIRST_FEW_BYTES: content with a NUL byte this early is binary."""


def _is_binary(text: str) -> bool:
    return b"\0" in text[:BINARY_SNIFF_BYTES].encode()[:BINARY_SNIFF_BYTES]


def _quote_char(c: str) -> str:
    if c in _C_ESCAPES:
        return "\\" + _C_ESCAPES[c]
    return f"\\{ord(c):03o}" if c < " " or c == "\x7f" else c


# --- the edit script ---------------------------------------------------------------------


def _diff(a: list[str], b: list[str]) -> list[_Change]:
    """xdl_diff: mark changed lines, compact both sides, then collect the changes."""
    table: dict[str, int] = {}  # line -> id; ids only need to be distinct, not dense
    ids_a = list(map(table.setdefault, a, count()))
    ids_b = list(map(table.setdefault, b, count(len(a))))
    # One spare False at the end: it is both changed[n] and (via index -1) changed[-1].
    changed_a, changed_b = [False] * (len(a) + 1), [False] * (len(b) + 1)
    _mark_changes(ids_a, ids_b, changed_a, changed_b)
    _compact(_Groups(ids_a, changed_a, changed_b), a)
    _compact(_Groups(ids_b, changed_b, changed_a), b)
    return _changes(changed_a, changed_b)


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
    search = _Search(list(map(ids_a.__getitem__, keep_a)), list(map(ids_b.__getitem__, keep_b)))
    changed_a, changed_b = search.changed_lines()
    for i in changed_a:
        ch_a[keep_a[i]] = True
    for i in changed_b:
        ch_b[keep_b[i]] = True


def _kept_lines(
    ids: list[int], lo: int, hi: int, other: dict[int, int], changed: list[bool]
) -> list[int]:
    """xdl_cleanup_records: lines without a match (or frequent ones amid such) are changed."""
    frequent = min(_bogosqrt(len(ids)), MAX_EQLIMIT)
    matches = map(other.get, ids[lo:hi], repeat(0))
    kinds = [0 if n == 0 else 2 if n >= frequent else 1 for n in matches]
    keep = [k == 1 or (k == 2 and not _in_discard_run(kinds, j)) for j, k in enumerate(kinds)]
    changed[lo:hi] = map(not_, keep)
    return list(compress(range(lo, hi), keep))


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


_Box = tuple[int, int, int, int]  # off1, lim1, off2, lim2: a[off1:lim1] against b[off2:lim2]
_Split = tuple[int, int, bool, bool]  # i1, i2 and whether each half still needs a minimal diff


class _Search:
    """xdl_recs_cmp / xdl_split: divide-and-conquer Myers over the kept (interned) lines.

    ``kvdf``/``kvdb`` hold the furthest x reached on each diagonal d = x - y going forward
    and backward.  Diagonals run from -(len(b) + 1) to len(a) + 1, so negative indexes wrap
    into the top of the lists without clashing.  A path strays at most one line past its box
    per step, and there are fewer steps than lines, so padding both sides with sentinels
    that never match lets the hot loops compare first and check the bounds only on a match.
    """

    def __init__(self, a: list[int], b: list[int]) -> None:
        ndiags = len(a) + len(b) + 3
        self.kvdf, self.kvdb = [0] * ndiags, [0] * ndiags
        self.max_cost = max(_bogosqrt(ndiags), MAX_COST_MIN)
        self.size = len(a), len(b)
        self.a, self.b = a + [-1] * ndiags, b + [-2] * ndiags
        # ap[x] is a[x - 1]: the backward search looks at the lines just above its point.
        self.ap, self.bp = [-1, *self.a], [-2, *self.b]

    def changed_lines(self) -> tuple[list[int], list[int]]:
        """Indexes (into a and b) of the lines that are not part of the common subsequence."""
        a, b = self.a, self.b
        out_a: list[int] = []
        out_b: list[int] = []
        boxes = [(0, self.size[0], 0, self.size[1], False)]
        while boxes:
            off1, lim1, off2, lim2, need_min = boxes.pop()
            while off1 < lim1 and off2 < lim2 and a[off1] == b[off2]:
                off1, off2 = off1 + 1, off2 + 1
            while off1 < lim1 and off2 < lim2 and a[lim1 - 1] == b[lim2 - 1]:
                lim1, lim2 = lim1 - 1, lim2 - 1
            if off1 == lim1 or off2 == lim2:
                out_a += range(off1, lim1)
                out_b += range(off2, lim2)
            else:
                i1, i2, min_lo, min_hi = self._split((off1, lim1, off2, lim2), need_min)
                boxes.append((i1, lim1, i2, lim2, min_hi))
                boxes.append((off1, i1, off2, i2, min_lo))
        return out_a, out_b

    def _split(self, box: _Box, need_min: bool) -> _Split:
        """Meet in the middle, or give up on optimality once the search gets costly."""
        a, b, kvdf, kvdb = self.a, self.b, self.kvdf, self.kvdb
        ap, bp = self.ap, self.bp
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
            hi = kvdf[fmax + 1]
            for d in range(fmax, fmin - 1, -2):
                lo = kvdf[d - 1]
                i1 = hi if lo < hi else lo + 1
                hi = lo
                if a[i1] == b[i1 - d] and i1 < lim1 and i1 - d < lim2:
                    start = i1
                    i1 += 1
                    while a[i1] == b[i1 - d] and i1 < lim1 and i1 - d < lim2:
                        i1 += 1
                    if i1 - start > SNAKE_CNT:
                        got_snake = True
                kvdf[d] = i1
                if odd and bmin <= d <= bmax and kvdb[d] <= i1:
                    return i1, i1 - d, True, True

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
            hi = kvdb[bmax + 1]
            for d in range(bmax, bmin - 1, -2):
                lo = kvdb[d - 1]
                i1 = lo if lo < hi else hi - 1
                hi = lo
                if ap[i1] == bp[i1 - d] and i1 > off1 and i1 - d > off2:
                    start = i1
                    i1 -= 1
                    while ap[i1] == bp[i1 - d] and i1 > off1 and i1 - d > off2:
                        i1 -= 1
                    if start - i1 > SNAKE_CNT:
                        got_snake = True
                kvdb[d] = i1
                if not odd and fmin <= d <= fmax and i1 <= kvdf[d]:
                    return i1, i1 - d, True, True

            if need_min:
                continue
            if got_snake and cost > HEUR_MIN_COST:
                spl = self._snake_split(box, (fmin, fmax, fmid), (bmin, bmax, bmid), cost)
                if spl:
                    return spl
            if cost >= self.max_cost:
                return self._furthest_split(box, (fmin, fmax), (bmin, bmax))

    def _snake_split(
        self, box: _Box, fwd: tuple[int, int, int], bwd: tuple[int, int, int], cost: int
    ) -> _Split | None:
        """Settle for a far-reaching diagonal that ends in a snake of SNAKE_CNT equal lines."""
        a, b, kvdf, kvdb = self.a, self.b, self.kvdf, self.kvdb
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

    def _furthest_split(self, box: _Box, fwd: tuple[int, int], bwd: tuple[int, int]) -> _Split:
        """Cost cut-off: split at whichever path (forward or backward) got furthest."""
        kvdf, kvdb = self.kvdf, self.kvdb
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
    """Cursor over one file's runs of changed lines (git's ``struct xdlgroup``).

    There is a (possibly empty) group above every unchanged line and one at the end, and
    the k-th group of one file faces the k-th group of the other.  The other file is not
    modified while this one is compacted, so its groups are located from its unchanged
    lines (``fences``) instead of walking a second cursor in lockstep.
    """

    def __init__(self, ids: list[int], changed: list[bool], other_changed: list[bool]) -> None:
        self.ids, self.changed = ids, changed
        self.fences = _fences(other_changed)
        self.start = self.end = self.index = 0

    def advance(self) -> bool:
        """Jump to the next non-empty group; False once there is none."""
        try:
            start = self.changed.index(True, self.end)
        except ValueError:
            return False
        self.index += start - self.end
        self.start, self.end = start, self.changed.index(False, start)
        return True

    def stuck(self) -> bool:
        """Neither slide is possible, as for most groups: nothing to compact."""
        start, end, ids = self.start, self.end, self.ids
        return (start == 0 or ids[start - 1] != ids[end - 1]) and (
            end == len(ids) or ids[start] != ids[end]
        )

    def faces_change(self) -> bool:
        return self.fences[self.index + 1] - self.fences[self.index] > 1

    def slide_down(self) -> bool:
        """Move the run one line down (its first line equals the line below it)."""
        if self.end == len(self.ids) or self.ids[self.start] != self.ids[self.end]:
            return False
        self.changed[self.start], self.changed[self.end] = False, True
        self.start, self.end = self.start + 1, self.changed.index(False, self.end + 1)
        self.index += 1
        return True

    def slide_up(self) -> bool:
        if self.start == 0 or self.ids[self.start - 1] != self.ids[self.end - 1]:
            return False
        self.start, self.end = self.start - 1, self.end - 1
        self.changed[self.start], self.changed[self.end] = True, False
        while self.changed[self.start - 1]:
            self.start -= 1
        self.index -= 1
        return True


def _compact(g: _Groups, lines: list[str]) -> None:
    """Slide each group as far as it goes, merging neighbours, then settle it where git does."""
    while g.advance():
        if g.stuck():
            continue
        earliest_end, aligned_end = _slide_through(g)
        if g.end == earliest_end:
            continue
        if aligned_end != -1:
            # Prefer lining up with a change on the other side (a modification).
            while not g.faces_change():
                g.slide_up()
        else:
            best = _best_shift(lines, g.end, g.end - g.start, earliest_end)
            while g.end > best:
                g.slide_up()


def _slide_through(g: _Groups) -> tuple[int, int]:
    """Slide to the top then the bottom until the group stops growing.

    Returns the highest end reachable and the last end that faced a change on the other side.
    """
    while True:
        size = g.end - g.start
        while g.slide_up():
            pass
        earliest_end = g.end
        aligned_end = g.end if g.faces_change() else -1
        while g.slide_down():
            if g.faces_change():
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


def _changes(ch_a: list[bool], ch_b: list[bool]) -> list[_Change]:
    """Pair the changed runs lying between the same two unchanged lines of each side."""
    return [
        (p1 + 1, p2 + 1, q1 - p1 - 1, q2 - p2 - 1)
        for (p1, p2), (q1, q2) in pairwise(zip(_fences(ch_a), _fences(ch_b), strict=True))
        if q1 - p1 > 1 or q2 - p2 > 1
    ]


def _fences(changed: list[bool]) -> list[int]:
    """-1, every unchanged line, then the end: group k lies between fences k and k + 1."""
    return [-1, *compress(count(), map(not_, changed))]


# --- output -------------------------------------------------------------------------------


_FUNC_START = frozenset(string.ascii_letters + "_$")


class _FuncNames:
    """git's default funcname: last old line before the hunk starting with a letter, _ or $."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.searched_to = -1
        self.text = ""

    def before(self, start: int) -> str:
        for i in range(start - 1, self.searched_to, -1):
            if self.lines[i][:1] in _FUNC_START:
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
    shown_a, shown_b = _shown(a), _shown(b)
    first = 0
    while first < len(changes):
        last = first
        while (
            last + 1 < len(changes)
            and changes[last + 1][0] - (changes[last][0] + changes[last][2]) <= 2 * context
        ):
            last += 1
        (h1, h2, _, _), (t1, t2, m1, m2) = changes[first], changes[last]
        s1, s2 = max(h1 - context, 0), max(h2 - context, 0)
        after = min(context, len(a) - t1 - m1, len(b) - t2 - m2)
        e1, e2 = t1 + m1 + after, t2 + m2 + after
        out.append(f"@@ -{_range(s1, e1 - s1)} +{_range(s2, e2 - s2)} @@{names.before(s1)}\n")
        pos = s1
        for i1, i2, n1, n2 in changes[first : last + 1]:
            out += _marked(" ", shown_a[pos:i1])
            out += _marked("-", shown_a[i1 : i1 + n1])
            out += _marked("+", shown_b[i2 : i2 + n2])
            pos = i1 + n1
        out += _marked(" ", shown_a[pos:e1])
        first = last + 1
    return out


def _marked(mark: str, lines: list[str]) -> list[str]:
    """The lines as one string, each after ``mark``: one join, not a string per line.

    Every shown line ends in a newline, so the mark lands at each line's start."""
    return [mark + mark.join(lines)] if lines else []


def _shown(lines: list[str]) -> list[str]:
    """Lines as printed: git flags a last line that lacks its newline."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n\\ No newline at end of file\n"]
    return lines


def _range(start: int, length: int) -> str:
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


# --- diff-match ---------------------------------------------------------------------------

HUNK_MARK = "@@ ... @@"
_HUNK_HEADER = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# Lines git prints before a file's first hunk (extended headers, ---/+++ labels).
_FILE_HEADER = re.compile(
    r"diff |index |--- |\+\+\+ |(new|deleted) file mode|(old|new) mode"
    r"|(dis)?similarity index|(rename|copy) (from|to)"
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
        elif not _FILE_HEADER.match(line):
            out.append(line)
    return "".join(line + "\n" for line in out)


@dataclass(frozen=True)
class DiffMatch:
    """Outcome of :func:`match_diff`; ``message`` says why, for the assertion report."""

    passed: bool
    message: str


def match_diff(
    actual_diff: str,
    expected_diff: str,
    mode: Literal["contains", "exact"] = "contains",
    *,
    path: str | None = None,
) -> DiffMatch:
    """Check an actual diff against an expected one.

    ``contains``: the expected text is a substring of the normalised actual diff (seed
    000's rule, so a fragment of a line matches too), or else every expected hunk body is
    a contiguous run inside one actual hunk (so a hunk pasted from ``git diff`` may carry
    less context, its ``@@`` numbers are ignored, and trailing whitespace an editor
    stripped does not matter).  ``exact``: the normalised diffs are equal.  Blank lines
    around the expected block never matter.

    An expected diff pasted from ``git diff``, ``git show`` or ``git format-patch`` over
    several files is cut down to the sections about ``path`` (a commit message before the
    first ``diff --git`` and a format-patch signature are not part of any section).
    """
    expected_diff = _sections_about(expected_diff, path)
    # An empty line inside an expected hunk is an empty context line whose lone space an
    # editor or a copy-paste stripped (a real diff line is never empty).
    expected = [line or " " for line in _strip_blank_edges(_normal_lines(expected_diff))]
    actual = _normal_lines(actual_diff)
    if expected and not actual:
        return DiffMatch(
            False, f"no changes: the actual diff is empty, expected:\n{_head(expected)}"
        )
    if mode == "exact":
        if _strip_blank_edges(actual) == expected:
            return DiffMatch(True, "diff matches exactly")
        where = _first_difference(_strip_blank_edges(actual), expected)
        return DiffMatch(False, f"diff differs from expectedDiff {where}\n{_preview(actual_diff)}")
    if not expected:
        return DiffMatch(False, "expectedDiff is empty")
    if _is_substring(expected_diff, normalize_diff(actual_diff)):
        return DiffMatch(True, "expectedDiff found in the actual diff")
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


def _is_substring(expected_diff: str, normalized_actual: str) -> bool:
    """The expected text, as written or normalised, inside the normalised actual diff.

    One line is a fragment and may match anywhere (``raise ValueError``). Several lines
    must match whole lines: starting at a line's start (or after its ``+``/``-``/`` ``
    marker) and ending at a line break, so ``-x = 1\n+x = 1`` does not match the line
    ``+x = 10``, nor `` return total`` the changed line ``+    return total``."""
    as_written = expected_diff.replace("\r\n", "\n").replace("\r", "\n")
    for text in (as_written, normalize_diff(expected_diff)):
        body = text.strip("\n")
        if not body:
            continue
        if "\n" not in body:
            if (body + "\n" if text.rstrip(" \t").endswith("\n") else body) in normalized_actual:
                return True
            continue
        actual = "\n" + normalized_actual
        if any(f"\n{marker}{body}\n" in actual for marker in ("", "+", "-", " ")):
            return True
    return False


_SIGNATURE = re.compile(r"\n-- \n[^\n+\- \\][^\n]*\n*$")
"""The ``-- `` line and git version that ``git format-patch`` ends a patch with."""


def _sections_about(diff: str, path: str | None) -> str:
    """The ``diff --git`` sections of ``diff`` about ``path`` (those naming it exactly,
    else those ending in it, else all); ``diff`` itself when it has no such sections."""
    text = diff.replace("\r\n", "\n")
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if not starts:
        return diff
    sections = ["\n".join(lines[a:b]) for a, b in pairwise([*starts, len(lines)])]
    sections[-1] = _SIGNATURE.sub("\n", sections[-1])
    if path:
        wanted = path.removeprefix("./")
        named = [_header_names(section) for section in sections]
        tiers = (
            (lambda n: n == wanted, 0),  # a/x, b/x, i/x … with the prefix taken off
            (lambda n: n == wanted, 1),  # as printed (--no-prefix)
            (lambda n: n.endswith("/" + wanted), 0),  # diffed from a parent directory
            (lambda n: n.endswith("/" + wanted), 1),
        )
        for same, kind in tiers:
            about = [
                s for s, names in zip(sections, named, strict=True) if any(map(same, names[kind]))
            ]
            if about:
                return "\n".join(about) + "\n"
    return "\n".join(sections) + "\n"


_HEADER_NAME = re.compile(r"(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)")


_PREFIXES = ("a/", "b/", "i/", "w/", "c/", "o/")  # default and diff.mnemonicPrefix labels


def _header_names(section: str) -> tuple[set[str], set[str]]:
    """The file names a section's header gives, unquoted: without their ``a/``-style
    prefix, and as printed."""
    printed: list[str] = []
    for line in section.split("\n")[1:]:
        if line.startswith("@@"):
            break
        found = _HEADER_NAME.fullmatch(line)
        if found is not None:
            printed.append(_unquote(found[1].removesuffix("\t")))
    first = section.split("\n", 1)[0].removeprefix("diff --git ")
    if not printed and first.count(" ") == 1:  # no ---/+++ (binary, mode only): "a/x b/x"
        printed = first.split(" ")
    bare = {name[2:] for name in printed if name[:2] in _PREFIXES}
    return bare, set(printed)


def _unquote(name: str) -> str:
    """A name as git quotes it (``"a/caf\\303\\251.py"``), back to text."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    out, chars, i = bytearray(), name[1:-1], 0
    escapes = {v: k for k, v in _C_ESCAPES.items()}
    while i < len(chars):
        char = chars[i]
        octal = chars[i + 1 : i + 4]
        if char == "\\" and len(octal) == 3 and set(octal) <= set("01234567") and octal < "400":
            out.append(int(octal, 8))
            i += 4
        elif char == "\\" and i + 1 < len(chars):
            out += escapes.get(chars[i + 1], chars[i + 1]).encode()
            i += 2
        else:
            out += char.encode()
            i += 1
    return out.decode("utf-8", "replace")


def _normal_lines(diff: str) -> list[str]:
    return normalize_diff(diff).split("\n")[:-1]


def _strip_blank_edges(lines: list[str]) -> list[str]:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return lines[filled[0] : filled[-1] + 1] if filled else []


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
    """``run`` is a contiguous part of ``body``, exactly or — when no line of ``run`` ends
    in whitespace, as after an editor stripped it — but for trailing whitespace."""
    if any(body[i : i + len(run)] == run for i in range(len(body) - len(run) + 1)):
        return True
    if any(line != line.rstrip() for line in run if line != " "):
        return False  # whitespace kept on purpose (a whitespace cleanup): exact only
    stripped, trimmed = [line.rstrip() for line in body], [line.rstrip() for line in run]
    return any(stripped[i : i + len(trimmed)] == trimmed for i in range(len(body) - len(run) + 1))


def _first_difference(actual: list[str], expected: list[str]) -> str:
    i = 0
    while i < min(len(actual), len(expected)) and actual[i] == expected[i]:
        i += 1
    got = repr(actual[i]) if i < len(actual) else "the end"
    wanted = repr(expected[i]) if i < len(expected) else "the end"
    return f"at normalised line {i + 1}: expected {wanted}, got {got}"


def _head(lines: list[str], limit: int = 5) -> str:
    more = f"\n  … ({len(lines) - limit} more lines)" if len(lines) > limit else ""
    return "\n".join("  " + line for line in lines[:limit]) + more


def _preview(diff: str) -> str:
    """The actual diff for a failure message, cut at PREVIEW_CHARS characters."""
    if len(diff) <= PREVIEW_CHARS:
        return f"actual diff:\n{diff}"
    return f"actual diff:\n{diff[:PREVIEW_CHARS]}… ({len(diff) - PREVIEW_CHARS} more characters)"
