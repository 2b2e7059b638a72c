"""The three-way line merge behind the YAML editor's byte-faithful ``dump``.

ruamel re-emits a whole document, not always as it was written. The edit is therefore
taken as the line diff between ruamel's dump of the tree before the first edit and its
dump now, and each changed hunk is applied to the original text where ruamel's "before"
lines match it; every other original line keeps its bytes. Plain text in, plain text
out: no YAML library here (see ``formats/yaml.py`` for when the result is used).
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def split_lines(text: str) -> list[str]:
    """``text`` as lines, each with its line end (the last one may have none)."""
    return _LINE.findall(text)


def _keep_gap(old: str, new: str) -> str:
    """``new`` with the spacing before its end-of-line comment as in ``old``, when both
    end with the same comment (ruamel keeps a comment's column instead)."""
    for m in re.finditer(r"[ \t]+#", old):
        comment = old[m.end() - 1:]
        if new.endswith(comment) and len(new) > len(comment):
            head = new[: len(new) - len(comment)]
            if head[-1] in " \t" and head.strip():
                return head.rstrip(" \t") + m.group(0)[:-1] + comment
            return new
    return new


def opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """An edit script ``a`` → ``b`` in the form of difflib's ``get_opcodes()`` (not always
    the same alignment), in linear work on a YAML file's usual lines: the common head and
    tail are cut off, and what is left is split at the lines found once in each (in
    order, the longest run of them: a patience diff's anchors, such as
    ``- name: srv-0042``); only the pieces between two anchors go to difflib. Over many
    alike lines (``command: npx``) difflib alone is quadratic in the file; a long stretch
    with no line found once still is."""
    n, m = len(a), len(b)
    head = 0
    while head < n and head < m and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and a[n - 1 - tail] == b[m - 1 - tail]:
        tail += 1
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    i, j = head, head
    for ai, bj in _anchors(a, b, head, n - tail, head, m - tail) + [(n - tail, m - tail)]:
        if ai > i or bj > j:
            ops += [(tag, i + i1, i + i2, j + j1, j + j2) for tag, i1, i2, j1, j2 in
                    difflib.SequenceMatcher(None, a[i:ai], b[j:bj], autojunk=False).get_opcodes()]
        if ai < n - tail:
            ops.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:  # one "equal" for a run of them, as difflib gives
        if merged and op[0] == "equal" == merged[-1][0]:
            last = merged[-1]
            merged[-1] = ("equal", last[1], op[2], last[3], op[4])
        else:
            merged.append(op)
    return merged


def _anchors(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int) -> list[tuple[int, int]]:
    """The (i, j) of lines found once in ``a[a0:a1]`` and once in ``b[b0:b1]``, the
    longest run of them in the same order in both (patience sorting)."""
    seen_a: dict[str, int] = {}
    for i in range(a0, a1):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[str, int] = {}
    for j in range(b0, b1):
        line = b[j]
        if seen_a.get(line, -1) != -1:
            seen_b[line] = -1 if line in seen_b else j
    pairs = sorted((seen_a[line], j) for line, j in seen_b.items() if j != -1)
    # the longest increasing run of j: piles' tops, each pair linked to the one before
    tops: list[int] = []
    top_at: list[int] = []
    back = [-1] * len(pairs)
    for k, (_i, j) in enumerate(pairs):
        p = bisect_left(tops, j)
        if p == len(tops):
            tops.append(j)
            top_at.append(k)
        else:
            tops[p], top_at[p] = j, k
        back[k] = top_at[p - 1] if p else -1
    out = []
    k = top_at[-1] if top_at else -1
    while k != -1:
        out.append(pairs[k])
        k = back[k]
    return out[::-1]


def merge(original: str, before: str, after: str, newline: str,
          replaced: list[tuple[int, int]] | None = None) -> str | None:
    """Apply the line changes ``before`` → ``after`` (both ruamel dumps) to ``original``
    (the file as parsed, which ``before`` renders), keeping every other original line.
    ``replaced``, if given, gets the (start, end) ranges of original lines (0-based, end
    excluded, in order) that the result does not keep: the YAML editor puts back what
    ruamel dropped from them (the comments in a flow collection)."""
    o = split_lines(original)
    r0 = split_lines(before)
    r1 = split_lines(after)
    ok = [ln.rstrip("\r\n") for ln in o]
    k0 = [ln.rstrip("\n") for ln in r0]
    k1 = [ln.rstrip("\n") for ln in r1]
    to_o: list[int | None]
    if ok == k0:  # ruamel wrote the file as it reads (every file taosync made): no diff
        to_o = list(range(len(k0)))  # (one of many alike lines made the diff quadratic)
    else:
        to_o = [None] * len(k0)
        for tag, i1, i2, j1, _j2 in opcodes(ok, k0):
            if tag == "equal":
                for d in range(i2 - i1):
                    to_o[j1 + d] = i1 + d
    ops = opcodes(k0, k1)
    # changed R0 ranges, widened to R0 lines that have an original counterpart
    # each hunk as (R0 range, original range): bounded by the original counterparts of
    # its first and last lines (or of the lines right outside it); when there are none,
    # widened to the nearest R0 lines that have one
    def start_at(i: int) -> int | None:
        if i < len(k0) and to_o[i] is not None:
            return to_o[i]
        if i > 0 and to_o[i - 1] is not None:
            return to_o[i - 1] + 1  # type: ignore[operator]
        return 0 if i == 0 else None

    def end_at(i: int) -> int | None:
        if i > 0 and to_o[i - 1] is not None:
            return to_o[i - 1] + 1  # type: ignore[operator]
        if i < len(k0) and to_o[i] is not None:
            return to_o[i]
        return len(o) if i == len(k0) else None

    spans: list[list[int]] = []
    for tag, i1, i2, _j1, _j2 in ops:
        if tag == "equal":
            continue
        o_start = end_at(i1) if tag == "insert" else start_at(i1)
        o_end = o_start if tag == "insert" else end_at(i2)
        inside = [to_o[i] for i in range(i1, i2) if to_o[i] is not None]
        if o_start is not None and o_end is not None and o_start <= o_end and all(o_start <= x < o_end for x in inside):  # type: ignore[operator]
            span = [i1, i2, o_start, o_end]
        else:
            a, b = i1, i2
            while a > 0 and to_o[a - 1] is None:
                a -= 1
            while b < len(k0) and to_o[b] is None:
                b += 1
            span = [a, b, to_o[a - 1] + 1 if a > 0 else 0, to_o[b] if b < len(k0) else len(o)]  # type: ignore[operator, list-item]
        if spans and (span[0] < spans[-1][1] or span[2] < spans[-1][3]
                      or (span[0], span[2]) == (spans[-1][1], spans[-1][3])):
            # overlapping hunks, or touching ones (a hunk widened up to where lines are
            # inserted takes those lines too): one hunk covering both
            last = spans[-1]
            spans[-1] = [min(last[0], span[0]), max(last[1], span[1]), min(last[2], span[2]), max(last[3], span[3])]
        else:
            spans.append(span)

    # where R0 line p starts in R1 (lines inserted right there included: the first op
    # that says), and where R0 line p - 1 ends (lines inserted right after: the last)
    starts: list[int | None] = [None] * (len(k0) + 1)
    ends = [0] * (len(k0) + 1)
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            for p in range(i1, i2):
                if starts[p] is None:
                    starts[p] = j1 + (p - i1)
            ends[i1 + 1:i2 + 1] = range(j1 + 1, j1 + 1 + i2 - i1)
        else:
            if starts[i1] is None:
                starts[i1] = j1
            ends[i2] = j2

    def r1_start(p: int) -> int:
        found = starts[p]
        return len(k1) if found is None else found

    def r1_end(p: int) -> int:
        return ends[p]

    out: list[str] = []
    o_pos = 0
    for a, b, o_start, o_end in spans:
        if o_start < o_pos or o_end < o_start:
            return None
        out.extend(o[o_pos:o_start])
        new = k1[r1_start(a):r1_end(b)]
        if len(new) == o_end - o_start:  # line for line: keep each comment's own gap
            new = [_keep_gap(ok[o_start + n], line) for n, line in enumerate(new)]
        out.extend(k + newline for k in new)
        o_pos = o_end
    out.extend(o[o_pos:])
    for i in range(len(out) - 1):
        if not out[i].endswith("\n"):
            out[i] += newline
    if replaced is not None:
        replaced.extend((o_start, o_end) for _a, _b, o_start, o_end in spans)
    text = "".join(out)
    if original and not original.endswith("\n") and text.endswith("\n"):
        text = text[: -len(newline)] if text.endswith(newline) else text[:-1]
    return text
