"""The run-time fleet: checked plain data read through its schema, without pydantic.

pydantic *defines* the fleet (:mod:`taosync.fleet.model`) and generates the schema, but
building the model costs ~150 ms of start-up, which every cold ``plan``/``apply`` would
pay after each edit of fleet.yaml. Once the loader's exact schema check has passed, the
plain data already is a valid fleet; this view answers the same attribute names, with
the defaults the committed schema records, and shares the model's methods
(:class:`~taosync.fleet.logic.FleetLogic`). ``tests/test_fleet_view.py`` holds the view and
the pydantic model to the same values and the same renders.
"""

from __future__ import annotations

import copy
from typing import Any

from taosync.fleet.logic import FleetLogic, RunTime
from taosync.formats.base import JSON_SCALARS


class Node:
    """An object of the schema: attributes are its properties (``claude_code`` reads
    ``claude-code``, ``continue_`` reads ``continue``), missing ones their defaults.

    Each attribute is wrapped once and then kept in the instance's ``__dict__``, the same
    object on every read, as a pydantic model's field is: re-wrapping ``fleet.models`` on
    each read made a loop over the catalogue that reads it (``context_window``)
    quadratic. Kept there, a later read is an ordinary attribute lookup: ``__getattr__``
    runs only after the lookup failed, and that failure formats an AttributeError's
    message (a few thousand instructions per read of an MCP server's field)."""

    __slots__ = ("_data", "_schema", "_defs", "__dict__")

    def __init__(self, data: dict, schema: dict, defs: dict):
        self._data = data
        self._schema = schema
        self._defs = defs

    def __getattr__(self, name: str) -> Any:
        value = self.__dict__[name] = self._attribute(name)
        return value

    def _attribute(self, name: str) -> Any:
        props = self._schema.get("properties", {})
        for key in (name, name.replace("_", "-"), name.rstrip("_")):
            if key in props:
                break
        else:
            if name == "kind" and "x-kind" in self._schema:
                return self._schema["x-kind"]
            raise AttributeError(name)
        sub = props[key]
        if key in self._data:
            return _wrap(self._data[key], sub, self._defs)
        if "default" in sub:
            return _wrap(copy.deepcopy(sub["default"]), sub, self._defs)
        return _wrap(_empty(_resolve(sub, self._defs)), sub, self._defs)

    def plain(self) -> dict:
        """The object as plain data, defaults filled in (as ``model_dump`` gives it)."""
        return {key: _plain(getattr(self, key.replace("-", "_")))
                for key in self._schema.get("properties", {})}

    def replaced(self, data: dict) -> "Node":
        return type(self)(data, self._schema, self._defs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


class FleetView(FleetLogic, Node):
    """The whole fleet (see the module docstring)."""

    __slots__ = ("_run_time",)

    def __init__(self, data: dict, schema: dict):
        from taosync.fleet.gateways import with_default

        super().__init__(data, schema, schema.get("$defs", {}))
        self._run_time = RunTime()
        self._run_time.own_gateway = isinstance(data.get("gateway"), dict)
        self.gateways_all()  # read as written, before gateway becomes the default one
        self._data = with_default(data)
        self.__dict__.pop("gateway", None)

    def _with_gateway(self, name: str) -> "FleetView":
        view = FleetView(self._data, self._schema)
        view._data = {**self._data, "gateway": self._gateway_data(name)}
        view.__dict__.pop("gateway", None)
        view._run_time = self._run_time.for_gateway(name)
        return view

    def _gateway_data(self, name: str) -> dict:
        """Gateway ``name``'s fields as written."""
        return self.gateways_all()[name]._data


def _resolve(schema: dict, defs: dict) -> dict:
    ref = schema.get("$ref")
    if ref:
        return defs[ref.rsplit("/", 1)[-1]]
    return schema


def _branch(value: Any, schema: dict, defs: dict) -> dict | None:
    """The branch of an ``anyOf`` that ``value`` matches (None for null)."""
    if value is None:
        return None
    for option in schema["anyOf"]:
        option = _resolve(option, defs)
        kind = option.get("type")
        if isinstance(value, dict) and (kind == "object" or "properties" in option):
            props = option.get("properties", {})
            if set(option.get("required", ())) <= set(value) and set(value) <= set(props):
                return option
        elif isinstance(value, list) and kind == "array":
            return option
        elif not isinstance(value, (dict, list)) and kind not in ("object", "array", "null"):
            return option
    return None


def _wrap(value: Any, schema: dict, defs: dict) -> Any:
    schema = _resolve(schema, defs)
    if "anyOf" in schema:
        branch = _branch(value, schema, defs)
        return value if branch is None else _wrap(value, branch, defs)
    if isinstance(value, dict):
        if "properties" in schema:
            return Node(value, schema, defs)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return {k: _wrap(v, extra, defs) for k, v in value.items()}
        return dict(value)
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict) or all(type(v) in JSON_SCALARS for v in value):
            return list(value)  # _wrap gives a scalar back as it is (args, a list of ids)
        return [_wrap(v, items, defs) for v in value]
    return value



def _empty(schema: dict) -> Any:
    """What an absent property without a default is: {} / [] (pydantic's
    ``default_factory``) or None."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {}
    if kind == "array":
        return []
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, Node):
        return value.plain()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
