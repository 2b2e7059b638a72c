"""How a client module declares its fleet.yaml options: plain data, no pydantic.

A client module lists ``OPTIONS`` (beyond the ``enabled``/``secrets``/``mcp`` every
client has); :mod:`taosync.fleet.model` turns them into the pydantic model the schema
is generated from, and the schema carries what the run-time checks need: ``x-slot`` marks
an option naming a route or a catalogue model, ``x-reserved`` values it must not take.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: kinds of slot: one route-or-model, a list of them, a mapping whose values are them
SLOT, SLOT_LIST, SLOT_MAP = "one", "list", "map"


@dataclass(frozen=True)
class Option:
    """One key of a client's fleet.yaml entry.

    ``type`` is a typing expression (``str | None``, ``list[str]``, ``Literal[…]``);
    ``default`` is copied for each fleet (a list or dict default is never shared).
    """

    name: str
    type: Any
    default: Any
    description: str
    pattern: str | None = None
    #: "" for a plain option, else SLOT / SLOT_LIST / SLOT_MAP
    slot: str = ""
    #: value → why it is refused (a cross-check tied to the option's line)
    reserved: dict[str, str] = field(default_factory=dict)


def slot(name: str, description: str, kind: str = SLOT, type: Any = str | None,
         default: Any = None) -> Option:
    """An option that names a route or a catalogue model."""
    return Option(name, type, default, description, slot=kind)


def attr_name(client_id: str) -> str:
    """The Python attribute a client id is read as (``claude-code`` → ``claude_code``,
    ``continue`` → ``continue_``)."""
    import keyword

    name = client_id.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name
