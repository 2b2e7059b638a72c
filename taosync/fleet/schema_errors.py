"""Step 5 of loading: the schema check, and each jsonschema error worded for a person
(type words, branch names, patterns, "did you mean") at its line and column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taosync.errors import TaosyncError
from taosync.fleet.fast_schema import Unsupported, _is_type, _num, fast_valid
from taosync.fleet.problems import PathT, closest, did_you_mean

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    from taosync.fleet.problems import Reporter


_URL_FIELDS = ("base_url", "anthropic_base_url", "openai_base_url", "gemini_base_url")
_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "nothing"}
_BRANCH_NAMES = {"McpStdio": "a stdio server", "McpHttp": "an http server"}
#: mirrors ``model.SUPPORTED_VERSIONS`` (a test keeps them equal) so this module never
#: imports pydantic just to read it
SUPPORTED_VERSIONS = (1,)


class SchemaErrors:
    """Step 5 of loading: check the data against the committed schema, reporting each
    error through ``report``."""

    def __init__(self, report: Reporter) -> None:
        self.report = report
        self._schema: dict = {}

    def check_schema(self, data: dict) -> None:
        from taosync.fleet import schema as _schema

        try:
            schema = _schema.load()
        except (OSError, ValueError) as exc:  # a broken install, not bad input
            raise TaosyncError(f"the fleet schema shipped with taosync cannot be read "
                               f"({exc}); reinstall taosync") from None
        try:
            if fast_valid(schema, data):
                return
        except Unsupported:
            pass
        # no stubs ship for jsonschema (types-jsonschema is not installed)
        from jsonschema.validators import Draft202012Validator  # type: ignore[import-untyped]

        self._schema = schema
        for err in Draft202012Validator(schema).iter_errors(data):
            self.schema_error(err)

    def schema_error(self, err: ValidationError) -> None:
        path = tuple(err.absolute_path)
        kind = err.validator
        inst = err.instance
        value = err.validator_value
        schema = err.schema if isinstance(err.schema, dict) else {}

        if path in self.report.reported:
            return
        if path == ("version",):
            self.report.error(path, f"unsupported version {_scalar_text(inst)}: this taosync reads "
                              f"version {', '.join(map(str, SUPPORTED_VERSIONS))}")
            return
        if "propertyNames" in err.relative_schema_path or "propertyNames" in err.schema_path:
            allowed = _allowed(value)
            name = inst if isinstance(inst, str) else str(inst)
            noun = "role" if path[-1:] == ("roles",) else "key"
            self.report.error(path + (name,), f"unknown {noun} '{name}'"
                              f"{did_you_mean(name, allowed)} ({noun}s: {', '.join(allowed)})",
                              at="key")
            return
        if kind in ("anyOf", "oneOf"):
            self.branch_error(err, path)
            return
        if kind == "additionalProperties" and isinstance(inst, dict):
            props = list(schema.get("properties", {}))
            for key in inst:
                if key in props:
                    continue
                if path == ("clients",):
                    msg = (f"unknown client '{key}'{did_you_mean(key, props)} "
                           f"(taosync configures {', '.join(props)})")
                elif "x-mcp-only" in schema and closest(key, props) is None:
                    msg = (f"'{key}' has no place here: {schema['x-mcp-only']}; remove it "
                           f"(keys: {', '.join(props)})")
                else:
                    where = "top-level key" if not path else "key"
                    msg = f"unknown {where} '{key}'{did_you_mean(key, props)}"
                    if props:
                        msg += f" (allowed: {', '.join(props)})"
                self.report.error(path + (key,), msg, at="key")
            return
        if kind == "required" and isinstance(inst, dict):
            for name in value:
                if name in inst or name in _typo_targets(inst, schema, value):
                    continue  # present, or mistyped: the unknown key says "did you mean"
                if not path and name == "version":
                    self.report.error(path, "version is missing: add `version: 1` at the top (this "
                                      f"taosync reads version {SUPPORTED_VERSIONS[0]})", at="key")
                else:
                    where = "key" if path else "top-level key"
                    self.report.error(path, f"missing required {where} '{name}'", at="key")
            return
        if kind == "type":
            wants = [value] if isinstance(value, str) else list(value)
            words = " or ".join(_TYPE_WORDS.get(w, w) for w in wants)
            hint = "; write {} for an empty mapping" if inst is None and "object" in wants else ""
            self.report.error(path, f"expected {words}, got {_kind(inst, path)}{hint}")
            return
        if kind == "enum":
            allowed = _allowed(value)
            guess = did_you_mean(inst, allowed) if isinstance(inst, str) else ""
            self.report.error(path, f"{_kind(inst, path)} is not allowed here{guess} "
                              f"(one of: {', '.join(allowed)})")
            return
        if kind == "const":
            self.report.error(path, f"must be {_scalar_text(value)}, got {_kind(inst, path)}")
            return
        if kind == "pattern":
            self.report.error(path, _pattern_message(path, value, inst))
            return
        if kind == "minLength":
            self.report.error(path, "must not be empty")
            return
        if kind == "minProperties":
            if path == ("models",):
                self.report.error(path, "the catalogue is empty: list at least one model "
                                  "(e.g. `gpt-4o-mini: {}`)", at="key")
            else:
                self.report.error(path, "must not be empty", at="key")
            return
        bounds = {"exclusiveMinimum": "greater than", "minimum": "at least",
                  "maximum": "at most", "exclusiveMaximum": "less than"}
        if kind in bounds:
            shown = value if isinstance(value, int) else f"{value:g}"
            self.report.error(path, f"must be {bounds[kind]} {shown}, got {_scalar_text(inst)}")
            return
        self.report.error(path, err.message)

    def branch_error(self, err: ValidationError, path: PathT) -> None:
        """anyOf/oneOf: find the branch the user meant and report its own errors."""
        inst = err.instance
        branches = [self.deref(b) for b in err.validator_value]
        groups: dict[int, list] = {}
        for sub in err.context or ():
            groups.setdefault(sub.relative_schema_path[0], []).append(sub)
        fitting = [i for i, b in enumerate(branches) if _type_fits(b, inst)]
        if not fitting:
            wants = " or ".join(dict.fromkeys(_describe(b) for b in branches))
            hint = "; write {} for an empty mapping" if inst is None else ""
            self.report.error(path, f"expected {wants}, got {_kind(inst, path)}{hint}")
            return
        if len(fitting) > 1 and isinstance(inst, dict):
            complete = [i for i in fitting
                        if all(r in inst for r in branches[i].get("required", ()))
                        and branches[i].get("required")]
            keyed = [i for i in fitting if branches[i].get("required")]
            if len(complete) > 1:
                names = " and ".join(f"{_branch_name(branches[i])} ('{branches[i]['required'][0]}')"
                                     for i in complete)
                self.report.error(path, f"mixes {names}; keep one", at="key")
                return
            if not complete and keyed and not any(
                    r in inst for i in keyed for r in branches[i]["required"]):
                options = " or ".join(f"'{branches[i]['required'][0]}' "
                                      f"({_branch_name(branches[i])})" for i in keyed)
                if not self.required_typos(inst, path, keyed, branches, options):
                    self.report.error(path, f"needs {options}", at="key")
                return

            def score(i):
                b = branches[i]
                props = b.get("properties", {})
                return (i in complete, sum(k in props for k in inst),
                        -len(groups.get(i, ())))

            fitting = [max(fitting, key=score)]
        subs = groups.get(fitting[0], [])
        if not subs:
            self.report.error(path, err.message)
        for sub in subs:
            self.schema_error(sub)

    def required_typos(self, inst: dict, path: PathT, keyed: list[int], branches: list,
                       options: str) -> bool:
        """A key no branch knows that is a likely typo of a branch's required key
        (``comand:`` for ``command:``): report it, at its own line, as the unknown key it
        is with "did you mean" — not the entry as missing what the user did write."""
        required = [r for i in keyed for r in branches[i]["required"]]
        known = {k for b in branches for k in b.get("properties", {})}
        found = False
        for key in inst:
            meant = closest(key, required) if key not in known else None
            if meant is not None:
                found = True
                self.report.error(path + (key,), f"unknown key '{key}'; did you mean '{meant}'? "
                                  f"(this entry needs {options})", at="key")
        return found

    def deref(self, branch: Any) -> dict:
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = self._schema.get("$defs", {}).get(ref[len("#/$defs/"):])
            if isinstance(target, dict):
                return target
        return branch if isinstance(branch, dict) else {}


def _typo_targets(inst: dict, schema: dict, required) -> set[str]:
    """The required keys ``inst`` most likely has under a mistyped name (``base_ur:``),
    when that name is reported as an unknown key (``additionalProperties: false``)."""
    if schema.get("additionalProperties") is not False:
        return set()
    props = schema.get("properties", {})
    missing = [r for r in required if r not in inst]
    # the same guess the unknown key's message makes, so the two never disagree
    guesses = (closest(k, props) for k in inst if k not in props)
    return {g for g in guesses if g is not None} & set(missing)


def _pattern_message(path: PathT, pattern: str, inst) -> str:
    last = path[-1] if path else ""
    if last in _URL_FIELDS or last == "url":
        return f"must be an http:// or https:// URL, got {_kind(inst, path)}"
    if last == "provider_id":
        return "may only hold letters, digits, _ and - (it names a TOML table)"
    if last == "secret_name":
        return "must be an environment-variable-style name (letters, digits, _)"
    return f"{_kind(inst, path)} does not match the pattern {pattern}"


def _sensitive(path: PathT) -> bool:
    return path == ("gateway", "key") or (len(path) == 3 and path[0] == "gateways"
                                          and path[2] == "key") or any(p in ("env", "headers") for p in path
                                             if isinstance(p, str))


def _kind(x, path: PathT = ()) -> str:
    """How to name a value in a message (never the value at a secret-bearing path)."""
    if x is None:
        return "nothing (an empty value)"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, list):
        return "a list"
    if _sensitive(path):
        return "a number" if _num(x) else "a string"
    if isinstance(x, (int, float)):
        return f"the number {x!r}"
    if isinstance(x, str):
        return f"the string {_short(x)!r}"
    return type(x).__name__


def _scalar_text(x) -> str:
    if isinstance(x, str):
        return repr(_short(x))
    if isinstance(x, bool):
        return "true" if x else "false"
    if x is None:
        return "nothing"
    if isinstance(x, (dict, list)):
        return _kind(x)
    return repr(x)


def _yaml_scalar(k) -> str:
    if isinstance(k, bool):
        return "true" if k else "false"
    if k is None:
        return "null"
    if isinstance(k, (int, float)):
        return repr(k)
    return "(a list or mapping)"


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _allowed(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _type_fits(branch: dict, inst) -> bool:
    t = branch.get("type")
    if t is None and "const" in branch:
        return _equal_type(branch["const"], inst)
    if t is None and "enum" in branch:
        return any(_equal_type(e, inst) for e in branch["enum"])
    if t is None:
        return True
    return any(_is_type(inst, w) for w in ([t] if isinstance(t, str) else t))


def _equal_type(a, b) -> bool:
    return (type(a) is type(b)) or (_num(a) and _num(b))


def _describe(branch: dict) -> str:
    if "const" in branch:
        return _scalar_text(branch["const"])
    t = branch.get("type")
    if t == "object" and branch.get("title") in _BRANCH_NAMES:
        return _BRANCH_NAMES[branch["title"]] + " (a mapping)"
    if isinstance(t, str):
        return _TYPE_WORDS.get(t, t)
    return "a value"


def _branch_name(branch: dict) -> str:
    title = branch.get("title", "")
    return _BRANCH_NAMES.get(title, title or "one kind")
