"""YAML parser errors in the user's words, at the line the user got wrong.

ruamel words an error as its parser sees it, often a line late: a missing colon is
"mapping values are not allowed here" on the *next* line; a line indented one space too
few is "expected <block end>, but found '<block mapping start>'"; an unclosed quote is
"found unexpected end of stream" at the end of the file. :func:`explain` reads the
error with the text around it and says what is wrong, where it is, and the fix. What it
cannot recognise keeps ruamel's words (prefixed "YAML syntax error").

Shared by fleet.yaml (fleet/yaml_source.py) and the YAML client files taosync edits
(formats/yaml.py).
"""

from __future__ import annotations

import re

#: a block key at the start of a line: (indent)(key)(':' then space or end)
_KEY = re.compile(r"^(\s*)(?:-\s+)?([^\s#:][^#]*?):(?:\s|$)")
_MAPPING_VALUES = "mapping values are not allowed here"


def explain(text: str, exc) -> tuple[int, int, str]:
    """(line, column, message) for ruamel's MarkedYAMLError ``exc`` raised on ``text``
    (both 1-based)."""
    lines = text.splitlines()
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line, mark.column) if mark is not None else (0, 0)
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    cmark = exc.context_mark
    words = _Words(lines)
    found = None
    if "'\\t'" in problem or "\t" in problem:
        found = (line, col, "a tab character here: YAML indents with spaces, never tabs; "
                 "replace the tab with spaces")
    elif problem == _MAPPING_VALUES:
        found = words.mapping_values(line, col)
    elif problem.startswith("could not find expected ':'") and cmark is not None:
        found = words.no_colon(cmark.line) or words.mapping_values(line, col)
    elif problem.startswith("expected <block end>"):
        found = words.block_end(line, col, problem, context, cmark)
    elif "while scanning a quoted scalar" in context and cmark is not None:
        found = words.unclosed_quote(cmark.line, cmark.column)
    elif re.match(r"expected ',' or '[\]}]'", problem) and cmark is not None:
        found = words.flow(line, col, problem, cmark)
    elif "found '<stream end>'" in problem or "end of stream" in problem:
        found = words.unclosed_bracket(line)
    if found is not None:
        fl, fc, message = found
        return fl + 1, fc + 1, message
    message = f"YAML syntax error: {problem or 'invalid YAML'}"
    if context and cmark is not None and cmark is not mark:
        message += f" ({context} at line {cmark.line + 1}, column {cmark.column + 1})"
    elif context:
        message += f" ({context})"
    return line + 1, col + 1, message


class _Words:
    """The text around an error, line by line (0-based here; the caller adds one)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def text(self, i: int) -> str:
        return self.lines[i] if 0 <= i < len(self.lines) else ""

    def content_above(self, i: int) -> int | None:
        """The nearest line above ``i`` that holds more than a comment."""
        for j in range(i - 1, -1, -1):
            stripped = self.lines[j].strip()
            if stripped and not stripped.startswith("#"):
                return j
        return None

    @staticmethod
    def indent(s: str) -> int:
        return len(s) - len(s.lstrip(" "))

    @staticmethod
    def shown(s: str, n: int = 50) -> str:
        s = _uncommented(s).strip()
        return s if len(s) <= n else s[: n - 1] + "…"

    # ---- "mapping values are not allowed here"

    def mapping_values(self, line: int, col: int):
        here = self.text(line)
        own = _KEY.match(here)
        if own is not None and own.end() <= col:
            # `key: some: value` — the value holds ': '
            key = own.group(2).strip()
            value = _uncommented(here)[own.end():].strip()
            return (line, col, f"the value of '{key}' holds ': ', which YAML reads as "
                    f"another key; quote the value: {key}: \"{value}\"")
        above = self.content_above(line)
        if above is None:
            return None
        prev = self.text(above)
        missing = self.no_colon(above)
        if missing is not None:
            return missing
        prev_key = _KEY.match(prev)
        if prev_key is not None and self.indent(here) > self.indent(prev):
            after = _uncommented(prev)[prev_key.end():].strip()
            if after:
                key = prev_key.group(2).strip()
                mine = _KEY.match(here)
                this = (mine.group(2).strip() + ":") if mine else here.strip()
                parent = self.content_above(above)
                up = self.text(parent) if parent is not None else ""
                owner = _KEY.match(up)
                if parent is not None and owner is not None and \
                        not _uncommented(up)[owner.end():].strip() and \
                        self.indent(up) >= self.indent(prev):
                    # `routes:` / `fast: x` / `  balanced: y`: it is `fast:` that slipped
                    name = owner.group(2).strip()
                    return (above, self.indent(prev),
                            f"'{key}:' is not indented under '{name}:' on line {parent + 1}; "
                            f"indent it like '{this}' on line {line + 1} "
                            f"({self.indent(here)} spaces)")
                return (line, self.indent(here),
                        f"'{this}' is indented more than '{key}:' on line {above + 1}, "
                        f"which already has a value ({self.shown(after)}); indent "
                        f"'{this}' like '{key}:' ({self.indent(prev)} spaces), or remove "
                        f"the value after '{key}:' if it belongs under it")
        return None

    def no_colon(self, i: int):
        """Line ``i`` is a key without its ':' (or with no space after it)."""
        s = _uncommented(self.text(i))
        body = s.strip()
        if not body or body.startswith(("-", "[", "{", '"', "'")) or ": " in body \
                or body.endswith(":"):
            return None
        start = self.indent(s)
        glued = re.match(r"([^\s:]+):(\S.*)$", body)
        if glued is not None:
            key, value = glued.groups()
            return (i, start + len(key), f"no space after ':' — YAML reads "
                    f"'{self.shown(body)}' as one word; write {key}: {value}")
        first, _, rest = body.partition(" ")
        fix = f"{first}: {rest.strip()}" if rest.strip() else f"{first}:"
        return (i, start + len(first), f"missing ':' after '{first}'; write {fix}")

    # ---- "expected <block end>, but found …"

    def block_end(self, line: int, col: int, problem: str, context: str, cmark):
        here = self.text(line)
        found = problem.rsplit("found", 1)[-1].strip().strip("'")
        if cmark is not None and "block collection" in context and found == "?":
            # `- item` lines, then a `key:` at the same place: the dash was the slip
            item = self.text(cmark.line).strip()
            key = _KEY.match(here)
            name = key.group(2).strip() if key else here.strip()
            return (cmark.line, cmark.column,
                    f"a list item ('{self.shown(item)}') where the mapping's keys are "
                    f"(like '{name}:' on line {line + 1}); write it as a key: remove the "
                    f"'- ' ({self.shown(item[1:].strip())}"
                    f"{'' if ':' in item else ': {}'})")
        if found == "-" and "block mapping" in context:
            return (line, col, f"a list item ('{self.shown(here)}') among the keys of a "
                    "mapping; write it as 'key: value', or put the list under a key of its own")
        if found == "<scalar>" and self.after_quote(line, col):
            return self.after_quote(line, col)
        # a line that lines up with nothing above it
        indent = self.indent(here)
        near = self.content_above(line)
        if near is not None and self.indent(self.text(near)) < indent:
            owner = _KEY.match(self.text(near))
            value = _uncommented(self.text(near))[owner.end():].strip() if owner else ""
            if owner is not None and value:
                name = owner.group(2).strip()
                return (line, indent, f"this line is indented under '{name}:' on line "
                        f"{near + 1}, which already has a value ({self.shown(value)}); remove "
                        f"that value if these lines belong under '{name}:'")
        above = near
        while above is not None and self.indent(self.text(above)) < indent:
            above = self.content_above(above)
        key = _KEY.match(here)
        this = (key.group(2).strip() + ":") if key else self.shown(here)
        what = ("items of one list" if here.strip().startswith("-")
                else "keys of one mapping")
        if above is not None and self.indent(self.text(above)) != indent:
            other = _KEY.match(self.text(above))
            that = (other.group(2).strip() + ":") if other else self.shown(self.text(above))
            return (line, indent,
                    f"the indentation does not line up: '{this}' has {indent} "
                    f"space{'' if indent == 1 else 's'} but '{that}' on line {above + 1} has "
                    f"{self.indent(self.text(above))}; {what} need the same "
                    "indentation (a key's contents more than the key)")
        return None

    # ---- an unclosed quote or bracket

    def unclosed_quote(self, i: int, col: int):
        quote = self.text(i)[col:col + 1] or '"'
        return (i, col, f"the string opened with {quote} here is never closed; add the "
                f"closing {quote} on this line")

    def after_quote(self, line: int, col: int):
        """Text right after a quoted string's closing quote (``'it's'``)."""
        here = self.text(line)
        if 0 < col <= len(here) and here[col - 1] in "'\"":
            quote = here[col - 1]
            inner = "write '' for a ' inside '…'" if quote == "'" else 'write \\" for a " inside "…"'
            return (line, col - 1, f"text follows the closing {quote} of a quoted string; "
                    f"{inner}, or quote the value with the other kind of quote")
        return None

    def unclosed_bracket(self, line: int):
        """The file ended inside a ``[`` or ``{``: the last line that opens more than it
        closes."""
        for i in range(min(line, len(self.lines) - 1), -1, -1):
            s = _uncommented(self.text(i))
            for opener, closer in (("[", "]"), ("{", "}")):
                if s.count(opener) > s.count(closer):
                    return (i, s.rfind(opener), f"the {opener} opened here is not closed; "
                            f"add '{closer}' at the end of line {i + 1}")
        return None

    def flow(self, line: int, col: int, problem: str, cmark):
        found = self.after_quote(line, col) if problem.endswith("'<scalar>'") else None
        if found is not None:
            return found
        for i in range(cmark.line, line + 1):
            q = open_quote(self.text(i))
            if q is not None and i < line:
                return self.unclosed_quote(i, q)
        closer = problem[len("expected ',' or '"):][0]
        opener = "[" if closer == "]" else "{"
        got = problem.rsplit("got", 1)[-1].strip().strip("'")
        if line == cmark.line and got == ":":
            return (line, col, f"a value inside {opener} {closer} holds ':', which YAML "
                    "reads as another key; quote the value (\"…\")")
        if line == cmark.line and got in "]}" and got != closer:
            return (line, col, f"the {opener} opened at column {cmark.column + 1} is closed "
                    f"with '{got}'; close it with '{closer}'")
        if line > cmark.line:
            return (cmark.line, cmark.column, f"the {opener} opened here is not closed; add "
                    f"'{closer}' at the end of line {cmark.line + 1}")
        return None


def _uncommented(s: str) -> str:
    """``s`` without a trailing `` # comment`` (outside quotes)."""
    quote = None
    for i, ch in enumerate(s):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or s[i - 1] in " \t[{,:"):
            quote = ch
        elif ch == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s


def open_quote(s: str) -> int | None:
    """The 0-based column of a quote that opens a string and is not closed on line ``s``
    (YAML's, and TOML's and JSON's in formats/syntax_words.py)."""
    quote, start = None, 0
    i = 0
    while i < len(s):
        ch = s[i]
        if quote == '"' and ch == "\\":
            i += 2
            continue
        if quote:
            if ch == quote:
                if quote == "'" and s[i + 1:i + 2] == "'":
                    i += 2
                    continue
                quote = None
        elif ch in "\"'" and (i == 0 or s[i - 1] in " \t[{,:=-"):
            quote, start = ch, i
        elif ch == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        i += 1
    return start if quote else None
