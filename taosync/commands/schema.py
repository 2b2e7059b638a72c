"""``taosync schema``: print the JSON schema of fleet.yaml (the committed copy, so no
pydantic import). Point an editor at it, or save it: ``taosync schema > fleet.schema.json``."""

from __future__ import annotations

import click

from taosync.settings import common_options


@click.command("schema")
@common_options
def schema() -> int:
    """Print the JSON schema of fleet.yaml."""
    from taosync.fleet import schema as fleet_schema

    click.echo(fleet_schema.text(), nl=False)
    return 0
