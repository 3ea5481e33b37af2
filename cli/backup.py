"""Backup and restore of a store run outside Docker: `eonyx backup`, `eonyx restore`.

Server-side commands: they act on the settings of `eonyx serve` (cli/server.py); the work
is done by shared/backup.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.api_client import counted
from cli.server import refuse_while_serving, say_where, server_settings
from shared.backup.archive import create_backup
from shared.backup.restore import restore_backup
from shared.core.errors import EonyxError
from shared.core.text import printable
from shared.files import permissions


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
def backup(path: Path) -> None:
    """Write a backup of the store to PATH (a .tar.gz; `-` writes it to stdout): a
    consistent copy of the database and DATA_DIR's session, image and memory files. Safe
    while the server runs. `eonyx restore PATH` puts it back."""
    settings, server = server_settings()
    say_where(settings, server)
    to_stdout = str(path) == "-"
    try:
        with permissions.private_files():
            manifest = create_backup(settings, sys.stdout.buffer if to_stdout else path)
    except EonyxError as exc:
        raise click.ClickException(printable(exc.message)) from None
    where = "stdout" if to_stdout else str(path)
    click.echo(
        f"backup written to {where}: the {manifest.database} database (schema "
        f"{manifest.revision or 'empty'}) and {counted(manifest.files, 'file')}",
        err=to_stdout,
    )


@click.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Restore over a store that holds data: its database, users' files and .agent "
    "folder are replaced by the backup's.",
)
def restore(path: Path, force: bool) -> None:
    """Restore a backup made by `eonyx backup` into this store (DATA_DIR and DATABASE_URL),
    which must be empty (or --force). The server must be stopped. The schema is then brought
    up to date and the session index rebuilt from the restored files."""
    settings, server = server_settings()
    refuse_while_serving(server, "restoring into it")
    say_where(settings, server)
    try:
        with permissions.private_files():
            report = restore_backup(settings, path, force=force)
    except EonyxError as exc:
        raise click.ClickException(printable(exc.message)) from None
    made = report.manifest
    click.echo(
        f"restored a backup of {made.created_at} (Eonyx {made.eonyx_version}): the "
        f"{made.database} database and {counted(report.files, 'file')}; "
        f"{counted(report.index.scanned, 'session')} indexed"
    )
    for failure in report.index.failed:
        click.echo(f"  not indexed: {printable(failure)}")


COMMANDS = [backup, restore]
