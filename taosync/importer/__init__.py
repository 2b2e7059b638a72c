"""The engine of ``taosync import``: client observations → a proposed fleet.yaml.

Each client module's ``observe(env)`` reads that client's own files and says what it
found and where (:class:`~taosync.clients.base.Observation`). This module merges them:

* **gateway**: every base URL is brought back to the gateway root (Anthropic-shaped
  clients are given the root, OpenAI-shaped ones root + ``/v1``; clients.md). One root
  for all → ``gateway.base_url``. One root per protocol on the same host → the root
  plus a per-protocol override. Anything else is a conflict: the root used by the most
  clients wins (ties: the first client in registry order), and the others are listed;
* **key**: never copied. ``gateway.key`` becomes ``${env:NAME}``, NAME being a variable
  the clients already read the key from (the one most clients use; ties:
  ``TAOTOKEN_API_KEY``, then client order), else a key helper command (``${shell:…}``),
  else ``TAOTOKEN_API_KEY``. Where literal keys were found is reported; two different
  keys are a conflict;
* **models and routes**: every model id a gateway client uses goes into the catalogue
  and gets a route named after the slot that first uses it (``model`` → ``main``,
  ``haiku`` → ``haiku``, Continue's ``roles.chat`` → ``chat``, a Codex profile →
  its name, which is also its file name and so is kept exactly); a model already
  routed reuses its route. ``default_route`` is the first slot of the first client on
  the chosen gateway;
* **clients**: each gateway client's slots as route names, plus the settings that
  reproduce how it holds the key (``secrets: reference``, Codex ``provider_id``,
  Continue ``secret_name``). A client on a provider that is not a gateway (its own API,
  a local server) is left out — apply would otherwise switch it — and reported;
* **MCP servers**: the union; the same name defined differently is a conflict (the
  first client's wins). A key literal inside one becomes ``${gateway.key}``; any other
  token-looking ``env``/``headers`` value (a credential-like name such as ``*_TOKEN``,
  ``*_KEY``, ``*SECRET*``, ``Authorization``, or a ``ghp_``/``github_pat_``/``sk-``/
  ``xox``/``glpat-`` value) becomes ``${env:NAME}`` — never copied — with the export
  line to set it, as for the key;

Findings are ``conflict`` (exit 1: two gateways, two keys, a client on an unknown
provider, an MCP server or header defined two ways), ``problem`` (a file that cannot be
read; exit 1) or ``note``. The YAML is written by hand, so the conflicts and sources can
sit next to the values they concern as comments.

Modules: :mod:`.findings` (what is reported), :mod:`.merge` (the rules above),
:mod:`.yaml_out` (the proposal's text).
"""

from __future__ import annotations

from typing import Iterable

from taosync.clients.base import Observation
from taosync.importer.findings import Finding, Proposal, url_root  # noqa: F401
from taosync.importer.merge import _looks_secret, build, describe_mcp  # noqa: F401
from taosync.importer.yaml_out import _block, emit, scalar  # noqa: F401


def observe_all(env, only: Iterable[str] | None = None) -> list[Observation]:
    """Every (or the named) client's observation, in registry order."""
    from taosync.clients.registry import all as all_clients

    registry = all_clients()
    names = [n for n in registry if only is None or n in set(only)]
    return [registry[n].observe(env) for n in names]
