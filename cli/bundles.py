"""`eonyx sessions export ID [--format md|zip]` and `eonyx sessions import FILE`.

Export writes `.eonyx/exports/eonyx-<id>.md` (or `.zip`) under the current directory, as the
TUI's /export does. The commands are registered on the `sessions` group by `register`, so
they move with that group wherever it lives.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.api_client import ApiClient, counted

EXPORTS = Path(".eonyx") / "exports"


@click.command("export")
@click.argument("session_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "zip"]),
    default="md",
    show_default=True,
    help="md: a readable transcript; zip: a bundle to import elsewhere (with the images).",
)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here.")
def export_session(session_id: str, fmt: str, output: Path | None) -> None:
    """Export a session to .eonyx/exports/eonyx-<id>.<md|zip>."""
    response = ApiClient.from_config().export(session_id, "markdown" if fmt == "md" else "zip")
    target = output or EXPORTS / f"eonyx-{session_id}.{fmt}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(response.content)
    click.echo(f"exported {session_id} to {target}")


@click.command("import")
@click.argument("bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_session(bundle: Path) -> None:
    """Import a zip bundle as a new session (never over an existing one)."""
    with bundle.open("rb") as data:
        result = ApiClient.from_config().import_bundle(data.read())
    session = result["session"]
    title = session["title"] or "(untitled)"
    click.echo(
        f"imported as {session['id']}  {counted(session['message_count'], 'message')}  {title}"
    )


def register(sessions: click.Group) -> None:
    """Add export and import to the `sessions` group."""
    sessions.add_command(export_session)
    sessions.add_command(import_session)
