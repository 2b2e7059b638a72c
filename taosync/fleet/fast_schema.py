"""An exact JSON Schema validator for the keywords the fleet schema uses: answers
"valid" without importing jsonschema (~100 ms of start-up).
"""

from __future__ import annotations

import re



class Unsupported(Exception):
    """The schema uses a keyword the fast validator does not know: use jsonschema."""


_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$id", "$schema",
                          "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                          "x-kind", "x-slot", "x-reserved", "x-requires",
                          "x-mcp-only", "x-speaks"})


def fast_valid(schema: dict, instance) -> bool:
    """True if ``instance`` is valid under ``schema`` (JSON Schema 2020-12).

    Exact for the keywords implemented here, which are all that the generated fleet
    schema uses; raises :class:`Unsupported` for any other keyword, so it can never
    call something valid that jsonschema would not (a test checks they agree).
    """
    return _valid(schema, schema, instance)


def _valid(s, root, x) -> bool:
    if s is True:
        return True
    if s is False:
        return False
    for k, v in s.items():
        if k in _ANNOTATIONS:
            continue
        check = _KEYWORDS.get(k)
        if check is None:
            raise Unsupported(k)
        if not check(v, s, root, x):
            return False
    return True


def _ref(v, s, root, x):
    if not (isinstance(v, str) and v.startswith("#/$defs/")):
        raise Unsupported("$ref " + str(v))
    target = root.get("$defs", {}).get(v[len("#/$defs/"):])
    if target is None:
        raise Unsupported("$ref " + v)
    return _valid(target, root, x)


def _is_type(x, t: str) -> bool:
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "string":
        return isinstance(x, str)
    if t == "boolean":
        return isinstance(x, bool)
    if t == "null":
        return x is None
    if isinstance(x, bool):
        return False
    if t == "integer":
        return isinstance(x, int) or (isinstance(x, float) and x.is_integer())
    if t == "number":
        return isinstance(x, (int, float))
    raise Unsupported("type " + t)


def _equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(i, j) for i, j in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _additional(v, s, root, x):
    if not isinstance(x, dict):
        return True
    if "patternProperties" in s:
        raise Unsupported("patternProperties")
    props = s.get("properties", {})
    return all(_valid(v, root, x[k]) for k in x if k not in props)


_KEYWORDS = {
    "$ref": _ref,
    "type": lambda v, s, r, x: any(_is_type(x, t) for t in ([v] if isinstance(v, str) else v)),
    "enum": lambda v, s, r, x: any(_equal(x, e) for e in v),
    "const": lambda v, s, r, x: _equal(x, v),
    "properties": lambda v, s, r, x: not isinstance(x, dict) or all(
        _valid(sub, r, x[k]) for k, sub in v.items() if k in x),
    "additionalProperties": _additional,
    "required": lambda v, s, r, x: not isinstance(x, dict) or all(k in x for k in v),
    "propertyNames": lambda v, s, r, x: not isinstance(x, dict) or all(
        _valid(v, r, k) for k in x),
    "minProperties": lambda v, s, r, x: not isinstance(x, dict) or len(x) >= v,
    "maxProperties": lambda v, s, r, x: not isinstance(x, dict) or len(x) <= v,
    "items": lambda v, s, r, x: not isinstance(x, list) or all(_valid(v, r, i) for i in x),
    "minItems": lambda v, s, r, x: not isinstance(x, list) or len(x) >= v,
    "maxItems": lambda v, s, r, x: not isinstance(x, list) or len(x) <= v,
    "pattern": lambda v, s, r, x: not isinstance(x, str) or re.search(v, x) is not None,
    "minLength": lambda v, s, r, x: not isinstance(x, str) or len(x) >= v,
    "maxLength": lambda v, s, r, x: not isinstance(x, str) or len(x) <= v,
    "minimum": lambda v, s, r, x: not _num(x) or x >= v,
    "maximum": lambda v, s, r, x: not _num(x) or x <= v,
    "exclusiveMinimum": lambda v, s, r, x: not _num(x) or x > v,
    "exclusiveMaximum": lambda v, s, r, x: not _num(x) or x < v,
    "anyOf": lambda v, s, r, x: any(_valid(b, r, x) for b in v),
    "oneOf": lambda v, s, r, x: sum(1 for b in v if _valid(b, r, x)) == 1,
    "allOf": lambda v, s, r, x: all(_valid(b, r, x) for b in v),
}
