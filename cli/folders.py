"""`eonyx folders list|create|rename|color|delete|order`: folders of sessions, over HTTP."""

from __future__ import annotations

from typing import Any

import click

from cli.api_client import ApiClient


def _show(folder: dict[str, Any]) -> str:
    return f"{folder['id']}  {folder['position']:>3}  {folder['color']:<7} {folder['name']}"


@click.group()
def folders() -> None:
    """Folders of sessions (see their sessions with `eonyx sessions --folder ID`)."""


@folders.command("list")
def folders_list() -> None:
    """List folders in their order: id, position, color, name."""
    items = ApiClient.from_config().folders()
    if not items:
        click.echo("no folders")
    for folder in items:
        click.echo(_show(folder))


@folders.command("create")
@click.argument("name")
@click.option("--color", help="A palette color (gray, red, orange, amber, green, teal, blue...).")
def folders_create(name: str, color: str | None) -> None:
    """Create a folder, last in the order."""
    body: dict[str, Any] = {"name": name} | ({"color": color} if color else {})
    click.echo(_show(ApiClient.from_config().create_folder(**body)))


@folders.command("rename")
@click.argument("folder_id")
@click.argument("name")
def folders_rename(folder_id: str, name: str) -> None:
    """Rename a folder."""
    folder = ApiClient.from_config().update_folder(folder_id, name=name)
    click.echo(_show(folder))


@folders.command("color")
@click.argument("folder_id")
@click.argument("color")
def folders_color(folder_id: str, color: str) -> None:
    """Give a folder another palette color."""
    folder = ApiClient.from_config().update_folder(folder_id, color=color)
    click.echo(_show(folder))


@folders.command("delete")
@click.argument("folder_id")
def folders_delete(folder_id: str) -> None:
    """Delete a folder; its sessions become unfiled, never deleted."""
    ApiClient.from_config().delete_folder(folder_id)
    click.echo(f"deleted folder {folder_id}; its sessions are unfiled")


@folders.command("order")
@click.argument("folder_ids", nargs=-1, required=True)
def folders_order(folder_ids: tuple[str, ...]) -> None:
    """Put folders in this order (those not named follow, as they were)."""
    for folder in ApiClient.from_config().order_folders(list(folder_ids)):
        click.echo(_show(folder))
