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


def merge(original: str, before: str, after: str, newline: str) -> str | None:
    """Apply the line changes ``before`` → ``after`` (both ruamel dumps) to ``original``
    (the file as parsed, which ``before`` renders), keeping every other original line."""
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
        for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, ok, k0, autojunk=False).get_opcodes():
            if tag == "equal":
                for d in range(i2 - i1):
                    to_o[j1 + d] = i1 + d
    ops = difflib.SequenceMatcher(None, k0, k1, autojunk=False).get_opcodes()
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
        if spans and (span[0] < spans[-1][1] or span[2] < spans[-1][3]):
            last = spans[-1]  # overlapping hunks: one hunk covering both
            spans[-1] = [min(last[0], span[0]), max(last[1], span[1]), min(last[2], span[2]), max(last[3], span[3])]
        else:
            spans.append(span)

    def r1_start(p: int) -> int:
        """Where R0 line ``p`` starts, in R1 (lines inserted right there included)."""
        for tag, i1, i2, j1, _j2 in ops:
            if tag == "equal" and i1 <= p < i2:
                return j1 + (p - i1)
            if tag != "equal" and i1 == p:
                return j1
        return len(k1)

    def r1_end(p: int) -> int:
        """Where R0 line ``p - 1`` ends, in R1 (lines inserted right after included)."""
        found = 0
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal" and i1 < p <= i2:
                found = j1 + (p - i1)
            elif tag != "equal" and i2 == p:
                found = j2
        return found

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
    text = "".join(out)
    if original and not original.endswith("\n") and text.endswith("\n"):
        text = text[: -len(newline)] if text.endswith(newline) else text[:-1]
    return text
