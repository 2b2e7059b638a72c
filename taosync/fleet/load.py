"""fleet.yaml → a checked fleet, or every problem in it, each with its line and column.

The pipeline, each step run only when the one before it could read the file:

1. read the bytes (at most :data:`MAX_BYTES`; UTF-8, located error if not);
2. parse with ruamel.yaml round-trip, which keeps the line and column of every node
   (syntax errors, tabs, duplicate keys → located errors; every duplicate is found).
   Steps 2–6 first run on ruamel's faster safe loader, which keeps no positions; only
   if they find a problem (or the file uses what the two loaders read differently:
   merge keys, dates, tags) do they run again on the round-trip tree, so every
   message is located exactly as before. Positions asked for later (a key that will
   not resolve) parse the round-trip tree then;
3. convert to plain JSON-like data (string keys, finite numbers, integers a client file
   can hold, no control characters or bidi overrides in keys and values, no custom tags);
4. normalise ``gateway.base_url`` (http(s) only; a trailing ``/v1`` or ``/`` is dropped
   with a warning);
5. check against the committed JSON schema (``taosync/schemas/fleet.schema.json``,
   generated from the pydantic model). A small exact validator for the keywords that
   schema uses answers "valid" without importing jsonschema (~100 ms of start-up);
   only when it says "invalid" does jsonschema run, to word every error;
6. cross-checks: routes name catalogue models, client slots name routes or models,
   ``default_route`` is a route, ``${…}`` references in ``mcp_servers`` resolve,
   Codex's provider id is not ``openai``;
7. resolve the key reference (``~`` means ``--home``); a literal key is a warning;
8. build the typed fleet: the run-time view of the checked data
   (:class:`~taosync.fleet.view.FleetView`, same answers as the pydantic model, no pydantic).

Where each step lives — a part of one load, given only what it needs and reporting into
the load's :class:`~taosync.fleet.problems.Findings`: 1–3 and positions
:mod:`~taosync.fleet.yaml_source` (one per file; ``include:`` :mod:`~taosync.fleet.includes`);
5 :mod:`~taosync.fleet.schema_errors` (with :mod:`~taosync.fleet.fast_schema`); 4 and 6
:mod:`~taosync.fleet.checks`; 7 :mod:`~taosync.fleet.resolve`; the shapes they report
:mod:`~taosync.fleet.problems`.

Every problem found is reported in one :class:`FleetInvalid`, sorted by line. Messages
never hold the key: a literal or resolved key is scrubbed from every message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from taosync.fleet.checks import CrossChecks
from taosync.fleet.includes import Includes, owner_of
from taosync.fleet.logic import url_userinfo
from taosync.fleet.problems import (Findings, FleetInvalid, PathT, Problem, _order, _Stop,
                                    format_path)
from taosync.fleet.resolve import SecretSteps
from taosync.fleet.schema import client_entries
from taosync.fleet.schema_errors import SchemaErrors
from taosync.fleet.secrets import SENSITIVE, Reference, Secret, parse_reference
from taosync.fleet.yaml_source import YamlSource, _NotFast

# what callers and tests read from this module, wherever it now lives
from taosync.fleet.checks import fleet_reference_names  # noqa: F401,E402
from taosync.fleet.fast_schema import Unsupported, fast_valid  # noqa: F401,E402
from taosync.fleet.problems import closest, did_you_mean  # noqa: F401,E402
from taosync.fleet.schema_errors import SUPPORTED_VERSIONS  # noqa: F401,E402
from taosync.fleet.yaml_source import MAX_BYTES, MAX_DEPTH, MAX_NODES  # noqa: F401,E402

if TYPE_CHECKING:
    from taosync.fleet.view import FleetView



def __getattr__(name: str):
    # client ids come from the schema (generated from the client registry), read on use
    if name == "KNOWN_CLIENTS":
        return tuple(client_entries())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the public shapes ----------------------------------------------------------------


@dataclass
class Loaded:
    """A checked fleet.yaml.

    ``fleet`` is the typed fleet (a :class:`~taosync.fleet.view.FleetView`; ``None`` only
    when :func:`load_fleet` was called with ``model=False``); ``data`` is the same content
    as plain data, normalised (what the view reads); ``key`` is ``None`` when the key was
    not resolved.
    """

    path: Path
    text: str
    sha256: str
    fleet: "FleetView | None"
    key: Secret | None
    key_ref: Reference
    warnings: list[Problem] = field(default_factory=list)
    data: dict = field(default_factory=dict, repr=False)
    #: (path, sha256) of every file read: fleet.yaml first, then each ``include:``d one
    sources: list[tuple[str, str]] = field(default_factory=list)
    #: YAML path (a tuple) → the file its value came from, when fleet.yaml includes others
    origins: dict[tuple, str] = field(default_factory=dict, repr=False)
    #: each environment variable an ``include:`` path expanded → its value (None: unset)
    include_vars: dict[str, str | None] = field(default_factory=dict, repr=False)
    #: a project run's overlay (fleet/overlay.py), None otherwise
    overlay: Any = field(default=None, repr=False)

    def origin_of(self, path: tuple) -> str:
        """The file the value at ``path`` came from (the longest prefix one file set)."""
        return owner_of(self.origins, path, str(self.path))

    def explain(self) -> list[tuple[str, Any, str]]:
        """(YAML path, value, file it came from) of every leaf value, in document order:
        what ``validate --explain`` prints for a fleet built from ``include:``s. The key is
        shown as its reference, never its value."""
        out: list[tuple[str, Any, str]] = []

        def walk(node, path):
            if isinstance(node, dict) and node:
                for k, v in node.items():
                    walk(v, (*path, k))
                return
            shown = node
            named = path[:1] == ("gateways",) and len(path) > 2
            if (path == ("gateway", "key") or named and path[2] == "key") \
                    and isinstance(node, str):
                shown = parse_reference(node).describe()
            if (path[:2] == ("gateway", "headers") or named and path[2] == "headers") \
                    and isinstance(node, str):
                shown = node if "${" in node else SENSITIVE  # a header value is a secret
            elif (path[:1] == ("gateway",) or named) and isinstance(node, str) \
                    and url_userinfo(node):
                shown = node.replace(f"//{url_userinfo(node)}@", "//…@", 1)
            out.append((format_path(path), shown, self.origin_of(path)))

        walk(self.data, ())
        return out


def load_fleet(path: Path, *, home: Path, environ: Mapping[str, str] | None = None,
               resolve_key: bool = True, model: bool = True,
               key_timeout: float | None = None, resolve_mcp: bool | None = None,
               project: Path | None = None, profile: str | None = None) -> Loaded:
    """Load, check and (by default) resolve fleet.yaml; raise :class:`FleetInvalid`.

    ``home`` is what ``~`` means in ``${file:~/…}`` (``--home``). ``model=False`` skips
    building the typed fleet (``taosync validate`` needs only the checks).
    ``resolve_mcp`` (default: as ``resolve_key``): resolve the MCP secrets; when not,
    each renders as the ``--no-key`` placeholder (doctor resolves the key alone when
    only an MCP secret fails). ``project``: a project's root; its overlay is merged over
    the fleet (fleet/overlay.py). ``profile``: merge that entry of ``profiles:`` onto the
    fleet first (fleet/profiles.py). One scope per run: not both.
    """
    loader = _Loader(Path(path), home=home, environ=environ, resolve_key=resolve_key,
                     key_timeout=key_timeout,
                     resolve_mcp=resolve_key if resolve_mcp is None else resolve_mcp,
                     profile=profile)
    if project is not None:
        from taosync.fleet.overlay import Overlay

        loader.overlay = Overlay(project, home=home)
    return loader.run(build_model=model)


# -- the pipeline -------------------------------------------------------------------


class Located:
    """How the check steps report (:class:`~taosync.fleet.problems.Reporter`): a
    problem at a YAML path of the merged data is located in the file its value came
    from — fleet.yaml, or the base fleet that set it."""

    def __init__(self, findings: Findings, includes: Includes) -> None:
        self.findings = findings
        self.includes = includes
        #: under --profile: a merged path → where the profile wrote it (fleet/profiles.py)
        self.remap: Callable[[PathT], PathT] | None = None

    @property
    def reported(self) -> set[PathT]:
        return self.findings.reported

    def error(self, path: PathT, message: str, at: str = "value") -> None:
        self._add(path, message, at, "error")

    def warn(self, path: PathT, message: str, at: str = "value") -> None:
        self._add(path, message, at, "warning")

    def _add(self, path: PathT, message: str, at: str, severity: str) -> None:
        if self.remap is not None:
            path = self.remap(path)
        source = self.includes.origin(path)
        line, col = source.position(path, at)
        self.findings.at(source.file, line, col, message, path, severity)


class _Loader:
    """One load of one fleet.yaml: the steps in order, each a part given only what it
    needs — the file (steps 1–3), its includes, the schema (5), the cross-checks (4, 6),
    the secrets (7) — and the findings they share."""

    def __init__(self, path: Path, *, home: Path, environ: Mapping[str, str] | None,
                 resolve_key: bool, key_timeout: float | None,
                 resolve_mcp: bool | None = None, profile: str | None = None) -> None:
        self.path = path
        self.profile = profile
        self.findings = Findings()
        self.source = YamlSource(path, self.findings)
        self.includes = Includes(self.source, self.findings, home=home, environ=environ)
        located = Located(self.findings, self.includes)
        self.located = located
        self.schema = SchemaErrors(located)
        self.cross = CrossChecks(located)
        self.overlay: Any = None  # a project run's overlay (fleet/overlay.py)
        self.secrets = SecretSteps(located, home=home, environ=environ,
                                   resolve_key=resolve_key,
                                   resolve_mcp=resolve_key if resolve_mcp is None else resolve_mcp,
                                   timeout=key_timeout)

    def fail(self) -> FleetInvalid:
        self.findings.scrub(self.secrets.known())
        return FleetInvalid(self.source.file, self.findings.errors, self.findings.warnings)

    # ---- the run

    def run(self, build_model: bool) -> Loaded:
        findings = self.findings
        data: dict = {}
        try:
            self.source.read()
            data = self.checked(fast=True)
            if findings.errors or findings.warnings:  # find them again where positions are known
                findings.forget()
                data = self.checked(fast=False)
            self.secrets.run(data)
        except _Stop:
            pass
        if findings.errors:
            raise self.fail()
        fleet = self.build_model(data) if build_model else None
        if fleet is not None:
            fleet.attach_mcp_secrets(self.secrets.mcp_secrets)
            fleet.attach_gateway_secrets(self.secrets.gateway_secrets,
                                         self.secrets.gateway_secrets_by)
            fleet.attach_gateway_keys(self.secrets.gateway_keys, self.secrets.key)
        findings.scrub(self.secrets.known())
        key_ref = self.secrets.key_ref
        assert key_ref is not None  # a missing or blank key is an error above
        return Loaded(path=self.path, text=self.source.text, sha256=self.source.digest,
                      fleet=fleet, key=self.secrets.key, key_ref=key_ref,
                      warnings=sorted(findings.warnings, key=_order), data=data,
                      sources=list(self.includes.sources),
                      include_vars=dict(self.includes.include_vars),
                      origins={p: src.file for p, src in self.includes.origins.items()},
                      overlay=self.overlay)

    def checked(self, fast: bool) -> dict:
        """Steps 2–6 (the ones that need no key) on the safe loader's tree when ``fast``
        (and it can be used), else on the round-trip tree."""
        data = None
        if fast:
            try:
                data = self.source.parse(fast=True)
            except _NotFast:
                pass
        if data is None:
            data = self.source.parse(fast=False)
        data = self.includes.merge(data, fast)
        if self.includes.failed:
            raise _Stop  # what the fleet lacks now is the include's doing: report it alone
        unknown = self.profile is not None and not self.with_profile(data)
        if self.overlay is not None:
            data = self.overlay.merge(data, root=self.source, findings=self.findings,
                                      includes=self.includes, fast=fast)
        self.cross.normalise_urls(data)
        self.schema.check_schema(data)
        self.cross.cross_check(data)
        if unknown:
            raise _Stop  # no such profile (or gateway): the fleet's own problems are said too
        return data

    def with_profile(self, data: dict) -> bool:
        """Merge the profile in effect onto ``data`` as an include merges (its values
        come from this file); False (reported, located) for an unknown profile or
        gateway: the load stops after the fleet's own checks."""
        from taosync.fleet import includes, profiles

        root = self.includes.root
        errors = len(self.findings.errors)
        profiles.overlay(
            data, str(self.profile), lambda path, msg: self.located.error(path, msg, "key"),
            lambda into, over, path: includes._deep_merge(into, over, root, path,
                                                          self.includes.origins))
        if len(self.findings.errors) > errors:
            return False
        name = str(self.profile)
        entry = (data.get("profiles") or {}).get(name)
        if isinstance(entry, dict):  # a problem in what the profile set is located there
            self.located.remap = lambda path: profiles.written_at(entry, name, path)
        return True

    # ---- 8. the model

    def build_model(self, data: dict) -> FleetView:
        """The typed fleet, read through the schema the data has just passed (exactly):
        the run-time view, which needs no pydantic (see fleet/view.py)."""
        from taosync.fleet import schema as _schema
        from taosync.fleet.view import FleetView

        return FleetView(data, _schema.load())
