"""Put a backup archive back: into an empty store, or over one with `force`.

Everything is checked before anything is written: the archive (its manifest, a schema this
Eonyx knows, the database kind and schema it holds, every member a file inside data/) and the
store (no account in the database, no user's file in DATA_DIR). Then the files are unpacked
into a folder inside DATA_DIR (tarfile's "data" filter refuses what would land outside it),
the database is replaced, the files are moved into place, the schema is brought up to date
and the session index is rebuilt from the session files.

Imports shared.core, shared.files, shared.db and shared.index.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from shared.backup import BackupError, archive, dumps, reindex
from shared.core.release import eonyx_version
from shared.core.settings import Settings
from shared.db.database import Database, knows_revision
from shared.files.permissions import make_private_dirs
from shared.index import sync

REPLACED = ("users", ".agent")  # what `force` removes before the archive's files go in


@dataclass(frozen=True)
class RestoreReport:
    manifest: archive.Manifest
    files: int
    index: sync.ReconcileReport


def restore_backup(settings: Settings, path: Path, *, force: bool = False) -> RestoreReport:
    with _open(path) as source:
        manifest = archive.read_manifest(source)
        check_fits(manifest, settings.database_url)
        members = archive.data_members(source, manifest)
        if not force:
            refuse_unless_empty(settings)
        make_private_dirs(settings.data_dir)
        staging = Path(tempfile.mkdtemp(prefix=archive.STAGING_PREFIX, dir=settings.data_dir))
        try:
            database_member = source.getmember(manifest.database_member)
            source.extractall(staging, members=[database_member, *members], filter=_private)
            dumps.load(settings.database_url, staging / manifest.database_member)
            files = _move_into_place(staging / archive.DATA, settings.data_dir, force=force)
        except (tarfile.TarError, KeyError) as exc:
            raise BackupError(f"the archive cannot be unpacked: {exc}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    database = Database(settings.database_url)
    try:
        database.migrate()
        report = reindex(database, settings.data_dir)
    finally:
        database.dispose()
    return RestoreReport(manifest, files, report)


def _open(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"{path} is not a backup archive ({exc})") from None


def check_fits(manifest: archive.Manifest, url: str) -> None:
    """Refuse an archive this Eonyx cannot restore into `url`."""
    made_by = f"Eonyx {manifest.eonyx_version}"
    if manifest.revision is not None and not knows_revision(manifest.revision):
        raise BackupError(
            f"this backup comes from a newer Eonyx schema ({made_by}, database revision "
            f"{manifest.revision}) than this Eonyx ({eonyx_version()}) knows: restore it with "
            f"{made_by} or newer"
        )
    kind = dumps.kind_of(url)
    if manifest.database != kind:
        hint = " (restore it on SQLite, then `eonyx db copy`)" if kind == dumps.POSTGRESQL else ""
        raise BackupError(
            f"this backup holds a {manifest.database} database and DATABASE_URL names a "
            f"{kind} one{hint}"
        )
    schema = dumps.postgres_schema(url) if kind == dumps.POSTGRESQL else None
    if schema != manifest.schema:
        raise BackupError(
            f"this backup holds the PostgreSQL schema {manifest.schema or 'public'} and "
            f"DATABASE_URL's search_path names {schema or 'none'}: restore it into the same "
            "schema name (`options=-csearch_path=...` in DATABASE_URL)"
        )


def refuse_unless_empty(settings: Settings) -> None:
    """A restore replaces the store: refuse one that holds accounts or users' files."""
    found = []
    accounts = _account_count(settings.database_url)
    if accounts:
        found.append(f"its database holds {accounts} account(s)")
    users_dir = settings.data_dir / "users"
    if users_dir.is_dir() and any(p.is_file() for p in users_dir.rglob("*")):
        found.append(f"{users_dir} holds users' sessions or memory")
    if found:
        raise BackupError(
            f"the store is not empty ({'; '.join(found)}): restore into a new DATA_DIR and "
            "database, or pass --force to replace what it holds"
        )


def _account_count(url: str) -> int:
    """The number of accounts; 0 when there is no database or no table yet. Opened without
    Eonyx's engine options, which would create a missing SQLite file."""
    if dumps.kind_of(url) == dumps.SQLITE and not dumps.sqlite_path(url).exists():
        return 0
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("users"):
                return 0
            return int(connection.execute(text("SELECT count(*) FROM users")).scalar_one())
    finally:
        engine.dispose()


def _private(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo:
    """tarfile's "data" filter (nothing outside `destination`, no links out, no devices),
    and the store's modes: files 0600, folders 0700."""
    checked = tarfile.data_filter(member, destination)
    return checked.replace(mode=0o700 if checked.isdir() else 0o600, deep=False)


def _move_into_place(staged: Path, data_dir: Path, *, force: bool) -> int:
    """The unpacked files moved into DATA_DIR (renames within one file system); with
    `force`, the users' folders and the deployment's .agent folder are emptied first."""
    if force:
        for name in REPLACED:
            shutil.rmtree(data_dir / name, ignore_errors=True)
    moved = 0
    for root, _folders, names in os.walk(staged):
        target = data_dir / Path(root).relative_to(staged)
        make_private_dirs(target)
        for name in names:
            os.replace(Path(root) / name, target / name)
            moved += 1
    return moved
