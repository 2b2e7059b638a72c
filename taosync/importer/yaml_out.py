"""The proposal as YAML, written by hand so conflicts and sources sit next to the
values they concern as comments.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping


#: written as \uXXXX: controls, and the bidi marks/overrides/isolates a terminal would
#: obey (fleet.yaml refuses them in values, so the proposal shows them escaped)
_NOT_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\xa0-\u061b\u061d-\u200d\u2010-\u2027"
                            "\u202f-\u2065\u206a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
                            "\U00010000-\U0010ffff]")
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./:+@-]*$")
_SPECIAL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|"
                      r"on|On|ON|off|Off|OFF|null|Null|NULL|~|[-+]?\.?[0-9].*"
                      r"|\.inf|\.nan|\.Inf|\.NaN|\.INF|\.NAN|[-+]\.inf)$")


def scalar(value: Any, flow: bool = False) -> str:
    """One YAML scalar: plain when unambiguous, else a JSON (= YAML double-quoted) string."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if (_PLAIN.fullmatch(text) and not _SPECIAL.fullmatch(text) and not text.endswith(":")
            and not (flow and ":" in text)):
        return text
    return _NOT_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}",
                              json.dumps(text, ensure_ascii=False))


def _block(value: Any, indent: int, comments: Mapping[tuple, str], path: tuple) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            here = path + (k,)
            note = comments.get(here)
            tail = f"  # {_one_line(note)}" if note else ""
            if isinstance(v, dict) and v:
                lines.append(f"{pad}{scalar(k)}:{tail}")
                lines.extend(_block(v, indent + 2, comments, here))
            elif isinstance(v, list) and v and all(not isinstance(x, (dict, list)) for x in v):
                lines.append(f"{pad}{scalar(k)}: [{', '.join(scalar(x, flow=True) for x in v)}]{tail}")
            elif isinstance(v, list) and v:
                lines.append(f"{pad}{scalar(k)}:{tail}")
                for x in v:
                    sub = _block(x, indent + 4, comments, here)
                    lines.append(f"{pad}  - {sub[0].lstrip()}")
                    lines.extend(sub[1:])
            elif isinstance(v, dict):
                lines.append(f"{pad}{scalar(k)}: {{}}{tail}")
            elif isinstance(v, list):
                lines.append(f"{pad}{scalar(k)}: []{tail}")
            else:
                lines.append(f"{pad}{scalar(k)}: {scalar(v)}{tail}")
        return lines
    return [f"{pad}{scalar(value)}"]


def _one_line(text: str) -> str:
    """Text fit for a YAML comment: line breaks and unprintables escaped."""
    return _NOT_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}",
                              str(text).replace("\r", "\\r").replace("\n", "\\n"))


def _comment_block(text: str, width: int = 88) -> list[str]:
    import textwrap

    out: list[str] = []
    for para in _one_line(text).split("\\n"):
        wrapped = textwrap.wrap(para, width - 2, break_long_words=False,
                                break_on_hyphens=False) or [""]
        out.extend(("# " + w).rstrip() for w in wrapped)
    return out


def emit(data: dict, builder: Any, key: dict, gateway: dict,
         sources: dict[str, list[str]]) -> str:
    """The proposed fleet.yaml, with the sources and conflicts as comments."""
    findings = builder.findings
    read = builder.read
    comments: dict[tuple, str] = {}

    url_src = [r for r in read if r["what"] == "url" and r["client"] in gateway["clients"]]
    if url_src:
        comments[("gateway", "base_url")] = "from " + ", ".join(
            dict.fromkeys(r["client"] for r in url_src))
    if key["env"] is not None:
        comments[("gateway", "key")] = f"export {key['env']}; the key is never copied here"
    else:
        comments[("gateway", "key")] = "the key helper Claude Code used; never the key itself"
    for route, target in data["routes"].items():
        model = target["candidates"][0] if isinstance(target, dict) else target
        users = [f"{r['client']} {r['slot']}" for r in read
                 if r["what"] == "model" and r["value"] == model]
        if users:
            comments[("routes", route)] = ", ".join(dict.fromkeys(users))
    for found in builder.mcp_secrets:
        field_name, _, label = found["key"].partition(".")
        comments[("mcp_servers", found["server"], field_name, label)] = \
            f"export {found['env']}; the value is never copied here"
    for client in gateway["others"]:
        comments[("clients", client)] = "on another gateway until now (see CONFLICTS above)"

    head: list[str] = []
    read_from = "; ".join(f"{c} ({', '.join(files)})" for c, files in sources.items())
    head += _comment_block(f"Proposed by `taosync import` from: {read_from}.")
    head += _comment_block("Review it, export the key, then run `taosync plan` to see what "
                           "apply would change (nothing, for the values read here).")
    for kind, title in (("problem", "PROBLEMS — files that could not be read (skipped):"),
                        ("conflict", "CONFLICTS — resolved by picking one side; check each "
                                     "before applying:")):
        head += _findings_block([f for f in findings if f.kind == kind], title)
    lines = head + ["version: 1", ""]
    for name, users in gateway.get("gateways", {}).items():
        comments[("gateways", name, "base_url")] = "from " + ", ".join(users)
        comments[("gateways", name, "key")] = "the key is never copied here"
    for section in ("gateway", "gateways", "models", "routes"):
        if section in data:
            lines += _block({section: data[section]}, 0, comments, ()) + [""]
    if "default_route" in data:
        lines += [f"default_route: {scalar(data['default_route'])}", ""]
    lines += ["clients:                 # a slot takes a route name (or a model id)"]
    lines += _block(data["clients"], 2, comments, ("clients",)) + [""]
    if "mcp_servers" in data:
        lines += ["mcp_servers:             # shared by every client above"]
        lines += _block(data["mcp_servers"], 2, comments, ("mcp_servers",)) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _findings_block(findings: list, title: str) -> list[str]:
    """One titled comment block of findings, each with its items side by side."""
    if not findings:
        return []
    head = ["#", f"# {title}"]
    for f in findings:
        head += ["#   " + line[2:] if line.startswith("# ") else "#"
                 for line in _comment_block(f"{f.topic}: {f.message}", 84)]
        for it in f.items:
            which = f" [{it['which']}]" if "which" in it else ""
            head.append(_one_line(f"#     {it['client']:<12} {it['value']}{which}  "
                                  f"({it['file']} {it['key']})"))
        if f.chosen:
            head += ["#     " + line[2:] for line in _comment_block(f"→ {f.chosen}", 82)]
    return head
