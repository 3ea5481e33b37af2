"""The `eonyx` command: one click group, one module per area.

Server-side commands (serve, worker, users, index, db) read the same settings as the server;
client commands (login, sessions) talk HTTP to EONYX_URL with a saved token.
"""

from __future__ import annotations

import click

from cli import client, server
from cli.catalog import models
from cli.memory import memory
from cli.run import run as run_command
from cli.sessions import sessions
from shared.core.settings import SettingsError


class EonyxGroup(click.Group):
    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except SettingsError as exc:
            raise click.ClickException(f"configuration error: {exc}") from None


@click.group(cls=EonyxGroup)
@click.version_option(package_name="eonyx")
def main() -> None:
    """Eonyx: durable memory and sessions for an LLM chat agent."""


for command in (*server.COMMANDS, models, *client.COMMANDS, sessions, run_command, memory):
    main.add_command(command)
