"""`eonyx memory`: show, edit and back up your memory files over the API."""

from __future__ import annotations

import click

from cli.api_client import ApiClient
from shared.core.text import printable

KINDS = click.Choice(["identity", "user", "agent"])


def _usage(file: dict) -> str:
    return f"{file['name']}: {file['chars']:,}/{file['limit']:,} chars"


@click.group()
def memory() -> None:
    """Your memory files, by KIND: identity (IDENTITY.md, edited by admins), user (the user
    profile, USER.md) and agent (the agent memory, MEMORY.md)."""


@memory.command("show")
@click.argument("kind", type=KINDS)
def memory_show(kind: str) -> None:
    """Print a memory file and how full it is."""
    file = ApiClient.from_config().memory(kind)
    content = printable(file["content"], multiline=True)
    click.echo(content, nl=not content.endswith("\n"))
    click.echo(_usage(file), err=True)


@memory.command("edit")
@click.argument("kind", type=KINDS)
def memory_edit(kind: str) -> None:
    """Open a memory file in $EDITOR and save it (a backup of the old one is kept)."""
    client = ApiClient.from_config()
    file = client.memory(kind)
    text = file["content"]
    while True:
        edited = click.edit(text, extension=".md", require_save=True)
        if edited is None or edited == file["content"]:
            click.echo("no change")
            return
        if len(edited) <= file["limit"]:
            break
        click.echo(f"{len(edited):,}/{file['limit']:,} chars: over the limit", err=True)
        if not click.confirm("Edit again?", default=True):
            raise click.ClickException("not saved")
        text = edited
    # With the version read, a change made meanwhile (by the model, say) is not overwritten.
    body = {"content": edited, "version": file["version"]}
    saved = client.put_memory(kind, body)
    click.echo(f"saved {_usage(saved)}")


@memory.command("backups")
@click.argument("kind", type=KINDS)
@click.option("--restore", "name", help="Put this backup back (the current file is kept too).")
def memory_backups(kind: str, name: str | None) -> None:
    """List the backups of a memory file, newest first, or restore one."""
    client = ApiClient.from_config()
    if name:
        restored = client.restore_memory_backup(kind, name)
        click.echo(f"restored {name}: {_usage(restored)}")
        return
    backups = client.memory_backups(kind)
    if not backups:
        click.echo("no backups yet")
    for backup in backups:
        click.echo(backup["name"])
