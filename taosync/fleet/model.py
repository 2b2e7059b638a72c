"""The desired state: what a valid fleet.yaml means, as typed objects.

The JSON schema in ``schemas/fleet.schema.json`` is generated from these classes
(``taosync schema``), so field descriptions here are also the editor hints users see.
The ``clients:`` section is built from the clients' option declarations *handed in*
(:func:`fleet_model`): the fleet layer never reads the client registry; the layer above
the clients (:mod:`taosync.schema_build`) hands the registry's declarations down, and the
run path reads the generated schema instead. Cross-field rules (routes name catalogue
models, slots name routes or models, …) live in :mod:`taosync.fleet.checks`, where each
problem can be tied to a line and column.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, ClassVar, Literal, Mapping, Protocol, Sequence

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, create_model,
                      model_validator)

from taosync.fleet.logic import FleetLogic, RunTime, attr_name
from taosync.fleet.profiles import NAME_PATTERN as PROFILE_NAME


SUPPORTED_VERSIONS = (1,)

SecretsMode = Literal["inline", "reference"]

#: a context window no model comes near (100 M tokens): a larger number is a typo, and
#: clients refuse it (Codex reads model_context_window as a 64-bit integer)
MAX_CONTEXT_WINDOW = 100_000_000



class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Gateway(_Strict):
    base_url: str = Field(
        description="The gateway root, e.g. https://taotoken.net/api. Anthropic-shaped "
        "clients get it as is, OpenAI-shaped ones get it + /v1. A user:password@ in it is "
        "a secret (redacted, 0600 files only) and warned about.",
        pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://",
    )
    key: str = Field(
        description="A reference to the key: ${env:NAME}, ${file:PATH}, ${cmd:COMMAND} "
        "(run without a shell) or ${shell:COMMAND}. A literal key works but is warned about.",
        min_length=1,
    )
    anthropic_base_url: str | None = Field(
        None,
        description="Override: the exact base URL for Anthropic-shaped clients "
        "(Claude Code), for gateways that do not serve /v1/messages under the root.",
        pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://",
    )
    openai_base_url: str | None = Field(
        None,
        description="Override: the exact base URL for OpenAI-shaped clients (Codex, Cline, "
        "Continue), for gateways whose OpenAI surface is not root + /v1.",
        pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://",
    )
    gemini_base_url: str | None = Field(
        None,
        description="The root Gemini-shaped clients (Gemini CLI) append "
        "/v1beta/models/{model}:streamGenerateContent to, when the gateway serves Gemini's "
        "protocol; without /v1. Gemini CLI needs it.",
        pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://",
    )
    protocols: list[Literal["anthropic", "openai", "gemini"]] | None = Field(
        None, description="The wire protocols this gateway serves (anthropic: Messages, "
        "openai: Chat Completions and Responses, gemini: generateContent); a client that "
        "speaks none of them cannot be put on it (a located error). Default: not checked.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra HTTP headers every client sends to the gateway (e.g. "
        "Helicone-Auth, CF-Access-Client-Secret). Every value is a secret: redacted in all "
        "output, written only into files of mode 0600, never in taosync's state. A value "
        "may hold one secret: ${env:NAME}, ${file:PATH}, ${cmd:COMMAND}, ${shell:COMMAND} "
        "(e.g. `Helicone-Auth: Bearer ${env:HELICONE_API_KEY}`); a literal credential is "
        "warned about. Names are HTTP tokens; control characters (CR, LF, NUL, …) are refused.",
    )


class Model(_Strict):
    backend: str | None = Field(
        None, description="A free label for where the model runs (cuda, oneapi, …); "
        "reported by verify and stats, checked by doctor."
    )
    context_window: Annotated[int, Field(gt=0, le=MAX_CONTEXT_WINDOW)] | None = Field(
        None, description="Context window in tokens, for clients that ask (at most "
        "100000000)."
    )
    cost: float = Field(1.0, gt=0, description="Relative price multiplier (default 1); a "
                        "score route divides by it, so a dearer model must be faster to win.")
    timeout: Annotated[float, Field(gt=0, le=600)] | None = Field(
        None, description="Seconds per probe of this model (overrides verify.timeout), so a "
        "slow stack does not hold up the rest.")
    retries: Annotated[int, Field(ge=0, le=10)] | None = Field(
        None, description="Retries of this model's probes (overrides verify.retries).")


class _Client(_Strict):
    enabled: bool = Field(True, description="false gives back what taosync wrote into "
                          "this client's files (restoring your earlier values, removing "
                          "files taosync created).")
    managed: bool = Field(True, description="false stops managing this client: taosync "
                          "forgets its owned keys and leaves its files exactly as they are "
                          "(`taosync forget CLIENT` sets it).")
    secrets: SecretsMode | None = Field(
        None, description="Override the fleet-wide secrets mode for this client."
    )
    mcp: bool = Field(True, description="Write the fleet's mcp_servers into this client.")
    gateway: str | None = Field(
        None, description="The named gateway (a key of `gateways:`, or `default` for "
        "`gateway:`) this client talks to; default: default_gateway.")


class OptionDeclaration(Protocol):
    """One key of a client's fleet.yaml entry, as a client declares it
    (``taosync.clients.base.Option``)."""

    # read-only (a frozen dataclass declares them)
    @property
    def name(self) -> str: ...

    @property
    def type(self) -> Any: ...

    @property
    def default(self) -> Any: ...

    @property
    def description(self) -> str: ...

    @property
    def pattern(self) -> str | None: ...

    @property
    def slot(self) -> str: ...

    @property
    def reserved(self) -> Mapping[str, str]: ...


class ClientDeclaration(Protocol):
    """What the schema needs of a client (a client module): its product name, the line
    that describes it, its options, ``REQUIRES`` (fleet key → why): the fleet keys it
    cannot work without, and ``GATEWAY``: False for an app that takes only MCP servers."""

    @property
    def TITLE(self) -> str: ...  # noqa: N802 - read-only: any client module's constant

    @property
    def SUMMARY(self) -> str: ...  # noqa: N802

    @property
    def OPTIONS(self) -> Sequence[OptionDeclaration]: ...  # noqa: N802

    @property
    def REQUIRES(self) -> Mapping[str, str]: ...  # noqa: N802

    @property
    def GATEWAY(self) -> bool: ...  # noqa: N802


def client_model(declaration: ClientDeclaration) -> type[_Client]:
    """The pydantic model of one client's entry, from the options it declares."""
    fields: dict[str, Any] = {}
    for option in declaration.OPTIONS:
        extra: dict[str, Any] = {}
        if option.slot:
            extra["x-slot"] = option.slot
        if option.reserved:
            extra["x-reserved"] = dict(option.reserved)
        field: dict[str, Any] = {"description": option.description,
                                 "json_schema_extra": extra or None}
        if isinstance(option.default, (list, dict)):
            field["default_factory"] = lambda d=option.default: copy.deepcopy(d)
        else:
            field["default"] = option.default
        if option.pattern:
            field["pattern"] = option.pattern
        fields[option.name] = (option.type, Field(**field))
    model = create_model(declaration.TITLE.replace(" ", ""), __base__=_Client, **fields)
    extra = {}
    if declaration.REQUIRES:  # fleet keys the client cannot work without: checked where
        extra["x-requires"] = dict(declaration.REQUIRES)  # it is enabled
    speaks = getattr(getattr(declaration, "CLIENT", None), "root", None)
    if declaration.GATEWAY and isinstance(speaks, str):  # the protocol family it speaks
        extra["x-speaks"] = speaks  # (a `protocol` option, where it has one, says more)
    if not declaration.GATEWAY:  # what a slot there is told (fleet/schema_errors.py)
        extra["x-mcp-only"] = (f"{declaration.TITLE} takes no custom gateway, only MCP "
                               f"servers from its files (the fleet's mcp_servers)")
    if extra:
        model.model_config = {**model.model_config, "json_schema_extra": extra}
    return model


def clients_model(declarations: Mapping[str, ClientDeclaration]) -> type[_Strict]:
    """The ``clients:`` section: one optional entry per client declared (client id →
    its declaration, in the order the schema lists them)."""
    fields: dict[str, Any] = {}
    for client_id, declaration in declarations.items():
        attr = attr_name(client_id)
        fields[attr] = (client_model(declaration) | None,
                        Field(None, alias=client_id if client_id != attr else None,
                              description=declaration.SUMMARY))
    return create_model("Clients", __base__=_Strict, **fields)


class _McpServer(_Strict):
    """What the run-time view offers for an MCP server too (fleet/view.py)."""

    def plain(self) -> dict:
        # an expanded server holds McpSecret values where the field says str
        return self.model_dump(warnings=False)

    def replaced(self, data: dict):
        """The same kind of server holding ``data`` (references expanded; values that
        held a key reference are :class:`~taosync.fleet.logic.McpSecret`, not str)."""
        return type(self).model_construct(**data)


class McpStdio(_McpServer):
    """An MCP server the client starts as a process (stdio)."""

    kind: ClassVar[str] = "stdio"
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              json_schema_extra={"x-kind": "stdio"})

    command: str = Field(min_length=1, description="The program to start (no shell).")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment for the server; values may use ${gateway.base_url}, "
        "${gateway.key} (the gateway of the client it is written into), "
        "${gateways.NAME.key}, ${routes.NAME}, ${models.ID}, ${default_route}, or be a secret: "
        "${env:NAME}, ${file:PATH}, ${cmd:COMMAND}, ${shell:COMMAND} (resolved like "
        "gateway.key; the file holding it is written 0600).",
    )
    cwd: str | None = Field(None, description="Working directory of the server.")


class McpHttp(_McpServer):
    """An MCP server the client reaches over HTTP."""

    kind: ClassVar[str] = "http"
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              json_schema_extra={"x-kind": "http"})

    url: str = Field(pattern=r"^https?://", description="The server's http(s) URL.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers; values may use fleet references such as ${gateway.key}, "
        "or hold one secret: ${env:NAME}, ${file:PATH}, ${cmd:COMMAND}, ${shell:COMMAND} "
        "(e.g. `Authorization: Bearer ${env:GITHUB_TOKEN}`).",
    )
    transport: Literal["http", "sse"] = Field(
        "http", description="http = streamable HTTP (the current MCP transport); sse = legacy."
    )


class Route(_Strict):
    """A route that chooses its model from candidates, on the verify history."""

    candidates: list[str] = Field(
        min_length=1, description="Catalogue model ids, in order of preference.")
    policy: Literal["failover", "score"] = Field(
        "failover", description="failover: the first candidate whose latest probe passed; "
        "score: the healthy candidate with the best weight / (median latency s × median "
        "tokens × cost).")
    weight: Annotated[float, Field(gt=0)] | None = Field(
        None, description="base(task) of the score; default by route name: fast 1.0, "
        "balanced 0.7, deep 0.4, others 0.5.")
    dwell: Annotated[float, Field(ge=0)] | Annotated[
            str, Field(pattern=r"^\s*\d+(\.\d+)?\s*[smhd]?\s*$")] = Field(
        "10m", description="Hysteresis: the least time the route stays on a healthy choice "
        "before it moves to another healthy candidate (back to the preferred one, or a "
        "better score), so a flapping backend does not rewrite every client on every flap. "
        "Moving away from a failing choice is always immediate. A number is seconds; 0 "
        "moves at once (e.g. 30s, 10m, 1h).")


class Routing(_Strict):
    window: int = Field(20, ge=1, le=10000,
                        description="How many of each model's latest probes the score reads.")
    max_age: str = Field("24h", pattern=r"^\s*\d+(\.\d+)?\s*[smhd]\s*$",
                         description="A probe older than this does not count as healthy "
                         "(e.g. 30m, 24h, 7d).")


class Verify(_Strict):
    prompt: str = Field("Reply with OK.", min_length=1,
                        description="The prompt of each probe request.")
    max_tokens: int = Field(16, gt=0, le=4096, description="max_tokens of each probe.")
    timeout: float = Field(20, gt=0, le=600, description="Seconds per probe.")
    retries: int = Field(2, ge=0, le=10, description="Retries on 429, 5xx and connect errors.")


class Profile(_Strict):
    """An isolated instance (docs/profiles.md): merged onto the fleet under --profile NAME,
    key by key as include: merges (mappings merge, anything else is replaced); its clients
    run with their own config root."""

    gateway: str | None = Field(
        None, description="The gateway this profile's clients talk to: default (the "
        "gateway: section) or a name of gateways:.")
    models: dict[str, Any] | None = Field(None, description="Merged onto models.")
    routes: dict[str, Any] | None = Field(None, description="Merged onto routes.")
    default_route: str | None = Field(None, description="Replaces default_route.")
    secrets: SecretsMode | None = Field(None, description="Replaces secrets.")
    clients: dict[str, Any] | None = Field(
        None, description="Merged onto clients (enabled: false leaves a client out of it).")
    mcp_servers: dict[str, Any] | None = Field(None, description="Merged onto mcp_servers.")
    verify: dict[str, Any] | None = Field(None, description="Merged onto verify.")
    routing: dict[str, Any] | None = Field(None, description="Merged onto routing.")


class ProjectOverlay(_Strict):
    """A project overlay (``projects:`` entry, or a repository's taosync.yaml): what
    ``taosync apply --project`` merges over this fleet (docs/project.md)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] | None = Field(None, description="Format version (taosync.yaml).")
    gateway: Gateway | str | None = Field(
        None, description="The project's gateway (replaces yours as a whole; its key is a "
        "reference, never inline), or the name of one of your gateways.")
    models: dict[str, Model] = Field(default_factory=dict,
                                     description="More catalogue models.")
    routes: dict[str, str | Route] = Field(default_factory=dict,
                                           description="Routes the project sets.")
    default_route: str | None = Field(None, description="The project's default route.")
    clients: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Client slots the project sets.")
    mcp_servers: dict[str, McpStdio | McpHttp] = Field(
        default_factory=dict, description="MCP servers the project adds.")


# The docstring is the schema's description. The ``clients:`` section is left open
# here: :func:`fleet_model` makes the fleet of the clients it is handed.
class FleetBase(FleetLogic, _Strict):
    """One gateway, its model catalogue, a routing table, and the clients that use them."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        title="taosync fleet",
        json_schema_extra={"$id": "https://taosync.dev/schemas/fleet.schema.json"},
    )

    version: Literal[1] = Field(description="Format version of this file.")
    include: list[str] = Field(
        default_factory=list,
        description="Base fleets merged under this file, in order (a later one wins, this "
        "file wins over all): paths relative to this file, or ~/…. Mappings merge key by "
        "key; lists and scalars are replaced. `taosync watch` re-applies when one changes.",
    )
    # None when only gateways: is given: the validator below makes it the default one
    gateway: Gateway = Field(  # type: ignore[assignment]
        None, description="The LLM gateway every client talks to (the gateway named "
        "`default`). Either this, `gateways:`, or both.")
    gateways: dict[str, Gateway] = Field(
        default_factory=dict,
        description="Named gateways (name → the same fields as gateway:); a client picks "
        "one with `gateway: NAME`, the others use default_gateway. `taosync use NAME` "
        "switches. See docs/gateways.md.")
    default_gateway: str | None = Field(
        None, description="The gateway clients use when their entry names none: a key of "
        "gateways:, or `default` (gateway:). Default: `default` when gateway: is set, else "
        "the only named gateway.")
    models: dict[str, Model] = Field(
        min_length=1, description="The catalogue: model id (as the gateway names it) → details."
    )
    routes: dict[str, str | Route] = Field(
        default_factory=dict, description="Task type → a catalogue model id, or candidates "
        "with a policy (failover | score) that taosync chooses among from the verify history."
    )
    default_route: str | None = Field(
        None, description="The route used where a client slot is not set."
    )
    secrets: SecretsMode = Field(
        "inline",
        description="inline: write the key into client files (mode 0600). reference: keep it "
        "off disk where the client can read it from the environment or a helper.",
    )
    clients: Any = Field(
        None,
        description="The clients taosync configures; a slot takes a route name or a "
        "catalogue model id.",
    )
    mcp_servers: dict[str, McpStdio | McpHttp] = Field(
        default_factory=dict,
        description="MCP servers written into every client with mcp: true: stdio "
        "(command, args, env, cwd) or http (url, headers, transport).",
    )
    projects: dict[str, ProjectOverlay] = Field(
        default_factory=dict,
        description="Project overlays: a repository's root (absolute or ~/…) → what "
        "`taosync apply --project` renders into that repository's project files, over "
        "this fleet (a taosync.yaml in the repository wins over its entry here).")
    profiles: dict[Annotated[str, StringConstraints(pattern=PROFILE_NAME)],
                   Profile | None] = Field(
        default_factory=dict,
        description="Isolated instances: NAME → an overlay of this fleet that `--profile NAME` "
        "renders into its own config root (docs/profiles.md).",
        json_schema_extra={"additionalProperties": False},  # a name that is no directory name
    )
    verify: Verify = Field(default_factory=lambda: Verify.model_validate({}),
                           description="How `taosync verify` probes each backend.")
    routing: Routing = Field(default_factory=lambda: Routing.model_validate({}),
                             description="How routes with candidates read the verify history.")
    #: what the loader and the router give the fleet at run time; never in the schema
    _run_time: RunTime = PrivateAttr(default_factory=RunTime)

    @model_validator(mode="after")
    def _default_gateway(self) -> "FleetBase":
        """``gateway`` answers as the default gateway when only ``gateways:`` is given
        (as the run-time view does: fleet/gateways.py)."""
        own: Gateway | None = self.gateway
        self._run_time.own_gateway = own is not None
        table = self.gateways_all()
        name = self.default_gateway or ("default" if own is not None else
                                        next(iter(table)) if len(table) == 1 else None)
        if name is None or name not in table:
            raise ValueError("no gateway: write gateway:, or gateways: with default_gateway")
        self.__dict__["gateway"] = table[name]
        return self

    def _with_gateway(self, name: str) -> "FleetBase":
        copy_ = self.model_copy(update={"gateway": self.gateways_all()[name]}, deep=False)
        copy_._run_time = self._run_time.for_gateway(name)
        return copy_


def fleet_model(declarations: Mapping[str, ClientDeclaration]) -> type[FleetBase]:
    """The fleet of the clients declared (client id → declaration): the layer above the
    clients hands the registry's in (:mod:`taosync.schema_build`); a test's toy client
    gets its place in the schema the same way."""
    clients = clients_model(declarations)
    return create_model("Fleet", __base__=FleetBase, __doc__=FleetBase.__doc__,
                        clients=(clients, Field(
                            default_factory=clients,
                            description=FleetBase.model_fields["clients"].description)))
