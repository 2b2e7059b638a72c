"""JSONC (JSON with ``//`` and ``/* */`` comments and trailing commas), edited as text.

opencode and Kilo read their config with a JSONC parser, so a user's comments there are
legitimate and must survive an edit. This reuses the strict JSON editor
(:mod:`taosync.formats.json_`) on a *shadow* of the text: the same text with every
comment and trailing comma blanked to spaces (newlines kept), so every offset is the same
in both. The JSON editor walks and splices the shadow; each splice is mirrored into the
real text (``JsoncDocument._spliced``), and ``dump`` hands back the real text, comments
and trailing commas included. Inserted text never holds a comment, so the two stay
aligned.

A comment after an object's last member (``"theme": "x", // mine``) belongs to that
member: a member added after it goes on the next line, the comment staying where it was
(the comma it follows is a separator again), and removing that member again leaves the
comment and its comma as they were (Zed's settings.json is full of such comments).

Every comment is the user's (taosync writes none), so none is lost with what taosync
takes out or writes anew: a member or element removed leaves the comments that were in
its text where it was, each on a line of its own; a value rewritten whole puts its
comments above its member; an empty container's comments open its body when a member
comes in. The shadow holds them as spaces (``_splice_raw``). A kept ``//`` comment is
never put before other text on its line (it would comment it out), and never takes the
CR of a CRLF line break with it.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from taosync.formats.base import FormatError, KeyPath, same_value
from taosync.formats.json_ import (_INDENT, JsonDocument, JsonEditor, _items, _line_col, _Node,
                                   _splice, _ws)

__all__ = ["EDITOR", "JsoncDocument", "JsoncEditor", "blank"]

#: a string, a comment or an unclosed ``/*``; a ``//`` comment ends before its line break,
#: the ``\r`` of a CRLF one too (else a comment moved to a line of its own keeps it: ``\r\r\n``)
_COMMENT_OR_STRING = re.compile(
    r'"(?:[^"\\]|\\.)*"|//[^\r\n]*(?:\r(?!\n)[^\r\n]*)*|/\*.*?\*/|/\*', re.S)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\r\n]*[}\]])', re.S)
#: what may follow a member on its line for its comment to stay there: its comma, a comment
#: (one ``/* */`` comment, never more: ``/* x */ "b": 2 /* y */`` is no comment of the line's)
_COMMENTED = re.compile(r"[ \t]*(,)[ \t]*(?://[^\r\n]*|/\*(?:[^*\r\n]|\*(?!/))*\*/)[ \t]*")
#: a last member's trailing comma, wherever it is before the container closes
_TRAILING_COMMA = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)*,", re.S)


def _spaces(text: str) -> str:
    """``text`` with every character but line breaks turned into a space."""
    return re.sub(r"[^\r\n]", " ", text)


def blank(text: str) -> str:
    """The shadow of a JSONC text: comments and trailing commas become spaces, so the
    result is strict JSON at the same offsets. FormatError for an unclosed comment."""
    def comment(m: re.Match) -> str:
        token = m.group(0)
        if token.startswith('"'):
            return token
        if token == "/*":
            line, col = _line_col(text, m.start())
            raise FormatError("invalid JSONC: a /* comment is never closed", line, col)
        return _spaces(token)

    shadow = _COMMENT_OR_STRING.sub(comment, text)
    return _TRAILING_COMMA_OR_STRING.sub(
        lambda m: m.group(0) if m.group(0).startswith('"') else " ", shadow)


@dataclass
class JsoncDocument(JsonDocument):
    """``text`` is the shadow the JSON editor works on; ``raw`` the file's real text."""

    raw: str = ""

    def _spliced(self, a: int, b: int, new: str) -> None:
        self.raw = self.raw[:a] + new + self.raw[b:]


def _commented(doc: JsoncDocument, end: int) -> tuple[int, int] | None:
    """(its comma's offset, its line's end) when the member ending at ``end`` is followed
    on its line by its comma and a comment, and by nothing else; else None."""
    e = doc.raw.find("\n", end)
    if e == -1:
        return None
    e -= doc.raw[e - 1] == "\r"
    m = _COMMENTED.fullmatch(doc.raw, end, e)
    return (m.start(1), e) if m else None


def _comments(raw: str, a: int, b: int) -> list[str]:
    """The comments in ``raw[a:b]``, a span that starts and ends between tokens."""
    return [m.group(0) for m in _COMMENT_OR_STRING.finditer(raw, a, b)
            if m.group(0)[0] == "/"]


def _splice_raw(doc: JsoncDocument, a: int, b: int, raw_new: str) -> None:
    """Replace ``raw[a:b]`` with ``raw_new`` — blanks and whole comments — and the shadow
    with what :func:`blank` makes of it (its tabs kept), so the two stay aligned."""
    raw = doc.raw
    _splice(doc, a, b, blank(raw_new))
    doc.raw = raw[:a] + raw_new + raw[b:]


def _kept(raw: str, a: int, b: int, comments: list[str], indent: str,
          newline: str) -> tuple[int, str, int]:
    """What replaces ``raw[a:b]`` — a removed member or element with its separator —
    when the user's ``comments`` sit in it, and the span it replaces: those comments,
    each on a line of its own at the member's ``indent`` (side by side in a one-line
    span, where all are ``/* */``), what followed on the same line moved to the next
    (a ``//`` comment would swallow it), at its own line's indent."""
    if "\n" not in raw[a:b]:
        lead = "" if raw[a - 1] in " \t{[" else " "
        return a, lead + " ".join(comments) + ("" if raw[b] in " \t}]," else " "), b
    line = raw.rfind("\n", 0, a) + 1
    lead = ""
    if raw[line:a].strip():  # after something on its line: the spaces before it go
        lead = newline + indent
        a = _blanks_before(raw, a)
    eol = raw.find("\n", b)
    if not raw[b:eol if eol != -1 else len(raw)].strip(" \t\r"):  # (its blanks go too)
        return a, lead + (newline + indent).join(comments), _past_indent(raw, b)
    line = raw.rfind("\n", 0, b) + 1
    own_indent = raw[line:_past_indent(raw, line)]
    # what followed goes on the next line, at its line's indent (the spaces before it go)
    return (a, lead + (newline + indent).join(comments) + newline + own_indent,
            _past_indent(raw, b))


def _blanks_before(text: str, pos: int, blanks: str = " \t") -> int:
    """Where the run of ``blanks`` that ends at ``pos`` starts."""
    while pos > 0 and text[pos - 1] in blanks:
        pos -= 1
    return pos


def _past_indent(text: str, pos: int) -> int:
    """Where the spaces and tabs from ``pos`` end."""
    m = _INDENT.match(text, pos)
    return m.end() if m else pos


def _line_start(doc: JsoncDocument, at: int) -> int | None:
    """Where the line of the token at ``at`` starts when only blanks and comments come
    before it on that line (the line break not inside a ``/* */``); else None."""
    text, raw = doc.text, doc.raw
    # just after the token before (the shadow has the comments as blanks)
    prev = _blanks_before(text, at, " \t\r\n")
    nl, pos = -1, prev
    for m in _COMMENT_OR_STRING.finditer(raw, prev, at):  # comments only, in the gap
        nl = max(nl, raw.rfind("\n", pos, m.start()))
        pos = m.end()
    nl = max(nl, raw.rfind("\n", pos, at))
    return nl + 1 if nl != -1 else None


def _put_before(doc: JsoncDocument, at: int, comments: list[str]) -> None:
    """Put ``comments`` before the token at ``at``: on lines of their own above its
    line when nothing but blanks and comments precede it there; else side by side
    before it when all are ``/* */``; else on lines of their own, the line broken
    before it (a ``//`` comment side by side would swallow the rest of the line)."""
    raw, newline = doc.raw, doc.newline
    line = _line_start(doc, at)
    if line is not None:
        indent = raw[line:_past_indent(raw, line)]
        _splice_raw(doc, line, line, "".join(indent + c + newline for c in comments))
    elif not any(c.startswith("//") for c in comments):
        _splice_raw(doc, at, at, " ".join(comments) + " ")
    else:
        start = _blanks_before(raw, at)  # the spaces before it go (outside any comment)
        sep = newline + JsonEditor._indent_at(raw, at)
        _splice_raw(doc, start, at, sep + sep.join(comments) + sep)


@contextmanager
def _bugs_are_format_errors() -> Iterator[None]:
    """An edit that lost the shadow's alignment (a bug here) fails as a FormatError, as
    ``dump``'s check makes it, not as a scan of the broken shadow fails: a caller refuses
    the file on a FormatError, any other error escapes it."""
    try:
        yield
    except (json.JSONDecodeError, IndexError, StopIteration) as exc:
        raise FormatError(f"internal error: the JSONC edit lost its alignment ({exc!r})") from None


def _own(doc: JsonDocument) -> JsoncDocument:
    """``doc`` as the JSONC document this editor parsed (it keeps the comments)."""
    if not isinstance(doc, JsoncDocument):
        raise TypeError("a JSONC edit needs the document JsoncEditor.parse made")
    return doc


class JsoncEditor(JsonEditor):
    """Format-preserving JSONC editor: comments and trailing commas are kept."""

    def parse(self, text: str) -> JsoncDocument:
        shadow = super().parse(blank(text))
        return JsoncDocument(shadow.text, shadow.newline, shadow.unit, raw=text)

    def set(self, doc: JsonDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        doc = _own(doc)
        with _bugs_are_format_errors():
            if self._root(doc) is not None:
                return super().set(doc, path, value)
            # a file of only comments (or nothing): the JSON editor writes the whole text
            kept = doc.raw.rstrip(" \t\r\n")
            made = super().set(doc, path, value)
            doc.raw = (kept + doc.newline if kept else "") + doc.text
            doc.text = blank(doc.raw)
            return made

    def delete(self, doc: JsonDocument, path: KeyPath) -> bool:
        with _bugs_are_format_errors():
            return super().delete(_own(doc), path)

    def _insert(self, doc: JsonDocument, node: _Node, parent: _Node | None, key: str | None,
                value: Any) -> None:
        doc = _own(doc)
        items = _items(doc, node)
        found = None
        if items and doc.text[node.start] == "{" and self._multiline(doc.text, node):
            found = _commented(doc, items[-1].end)
        if found is None:
            comments = [] if items else _comments(doc.raw, node.start + 1, node.end - 1)
            super()._insert(doc, node, parent, key, value)
            if comments:  # an empty container's own comments: they open its body
                _put_before(doc, _ws(doc.text, node.start + 1), comments)
            return None
        # after the last member's comment, on a line of its own; that member's comma,
        # blanked in the shadow as trailing, separates again
        comma, eol = found
        last = items[-1]
        indent = self._indent_at(doc.text, last.key_start)
        member = (json.dumps(key, ensure_ascii=False) + doc.text[last.key_end:last.start]
                  + self._render(doc, value, indent, inline=False))
        doc.text = doc.text[:comma] + "," + doc.text[comma + 1:]
        _splice(doc, eol, eol, doc.newline + indent + member, restructured=node.start)

    def _replace(self, doc: JsonDocument, path: KeyPath, nodes: list[_Node], value: Any) -> None:
        doc = _own(doc)
        node = nodes[-1]
        comments = _comments(doc.raw, node.start, node.end)
        old = node.value(doc.text) if comments else None
        if not comments or same_value(old, value) or (isinstance(old, dict)
                                                      and isinstance(value, dict)):
            return super()._replace(doc, path, nodes, value)  # (a mapping: key by key)
        # the value is written anew: the user's comments in it go before its member
        items = _items(doc, nodes[-2])
        at = items[items.at(node.start)].key_start
        super()._replace(doc, path, nodes, value)
        _put_before(doc, at, comments)
        return None

    def _remove(self, doc: JsonDocument, container: _Node, node: _Node) -> None:
        """Take the member or element out with its separator (the inverse of an insert:
        a trailing comma after the last one stays, now the one's before it); the user's
        comments in that text stay."""
        doc = _own(doc)
        items = _items(doc, container)
        i = items.at(node.start)
        if 0 < i == len(items) - 1:
            found = _commented(doc, items[i - 1].end)
            end = items[i].end
            comma = _TRAILING_COMMA.match(doc.raw, end)
            end = comma.end() if comma else end
            key_start = items[i].key_start
            if found and not doc.raw[found[1]:key_start].strip() \
                    and not _comments(doc.raw, key_start, end):
                # the last member after a commented one: its lines go, with its trailing
                # comma; the comment stays, and the comma before it is trailing again
                comma_at, eol = found
                doc.text = doc.text[:comma_at] + " " + doc.text[comma_at + 1:]
                nl = doc.raw.find("\n", end)
                if nl == -1 or doc.raw[end:nl].strip(" \t\r"):
                    # not alone on its line: what follows it (a `}`, a comment) stays
                    # on that line, never joins the comment's
                    eol = key_start
                return _splice(doc, eol, _past_indent(doc.raw, end), "",
                               restructured=container.start)
        a, b = self._cut(doc, container, node)
        comments = _comments(doc.raw, a, b)
        if not comments:
            return _splice(doc, a, b, "")
        indent = self._indent_at(doc.raw, node.start)
        a, kept, b = _kept(doc.raw, a, b, comments, indent, doc.newline)
        return _splice_raw(doc, a, b, kept)

    def dump(self, doc: JsonDocument) -> str:
        doc = _own(doc)
        super().dump(doc)  # the shadow is still JSON
        if doc._edited and blank(doc.raw) != doc.text:  # pragma: no cover - a bug here
            raise FormatError("internal error: the JSONC edit lost its alignment")
        return doc.raw


EDITOR = JsoncEditor()
