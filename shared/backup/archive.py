"""The backup archive: one .tar.gz with a manifest, the database and DATA_DIR's files.

    manifest.json                  what made it: Eonyx version, time, database, schema revision
    database.sqlite3 | .pgdump     the database (dumps.py)
    data/...                       DATA_DIR's files: sessions, images, memory, identity

Left out of data/: what a running server keeps for itself and rebuilds (DATA_DIR/run: its
sockets, pid and settings files; the file locks; the embedded Redis's queue, whose jobs the
sweeps redo) and the SQLite database's own files, which the online backup copied already.
The archive is written beside its destination and renamed into place, 0600 like the store.

Imports shared.core, shared.files, shared.db.
"""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path, PurePosixPath
from typing import IO

from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

from shared.backup import BackupError, dumps
from shared.core.clock import isoformat, utcnow
from shared.core.release import eonyx_version
from shared.core.settings import Settings
from shared.files.filestore import fsync_dir
from shared.files.permissions import sqlite_files

FORMAT = 1
MANIFEST = "manifest.json"
DATABASE_MEMBERS = {dumps.SQLITE: "database.sqlite3", dumps.POSTGRESQL: "database.pgdump"}
DATA = "data"
PROCESS_STATE = frozenset({"run", "locks", "redis"})  # top-level folders of DATA_DIR left out
STAGING_PREFIX = ".restore-"  # restore.py unpacks into DATA_DIR/.restore-*


@dataclass(frozen=True)
class Manifest:
    format: int
    eonyx_version: str
    created_at: str
    database: str  # "sqlite" or "postgresql"
    revision: str | None  # the newest migration applied to the database
    schema: str | None  # PostgreSQL: the schema dumped alone (the URL's search_path)
    files: int

    @property
    def database_member(self) -> str:
        return DATABASE_MEMBERS[self.database]


def create_backup(settings: Settings, destination: Path | IO[bytes]) -> Manifest:
    """Back up the store to `destination`: a path (written atomically) or a stream."""
    kind = dumps.kind_of(settings.database_url)
    work_in = destination.parent if isinstance(destination, Path) else None
    if work_in is not None and not work_in.is_dir():
        raise BackupError(f"there is no folder {work_in} to write the backup in")
    with tempfile.TemporaryDirectory(prefix=".eonyx-backup-", dir=work_in) as work:
        database_copy = Path(work) / DATABASE_MEMBERS[kind]
        revision = _revision(settings.database_url) if kind == dumps.POSTGRESQL else None
        dumps.dump(settings.database_url, database_copy)
        if kind == dumps.SQLITE:
            revision = _revision(f"sqlite:///{database_copy}")
        files = store_files(settings)
        manifest = Manifest(
            format=FORMAT,
            eonyx_version=eonyx_version(),
            created_at=isoformat(utcnow()),
            database=kind,
            revision=revision,
            schema=dumps.postgres_schema(settings.database_url) if kind != dumps.SQLITE else None,
            files=len(files),
        )
        if isinstance(destination, Path):
            with _atomic_file(destination) as out:
                written = _write(out, False, manifest, database_copy, settings.data_dir, files)
        else:
            written = _write(destination, True, manifest, database_copy, settings.data_dir, files)
    return written


def store_files(settings: Settings) -> list[Path]:
    """DATA_DIR's regular files to back up, in a stable order (see the module's docstring)."""
    data_dir = settings.data_dir
    left_out = set(sqlite_files(settings.database_url))
    for database in sqlite_files(settings.database_url)[:1]:  # its journal and writers' gate
        left_out |= {Path(f"{database}-journal"), Path(f"{database}-writers")}
    found: list[Path] = []
    for root, folders, names in os.walk(data_dir):
        if Path(root) == data_dir:
            folders[:] = [f for f in folders if f not in PROCESS_STATE]
        folders[:] = sorted(f for f in folders if not f.startswith((STAGING_PREFIX, ".eonyx-")))
        for name in sorted(names):
            path = Path(root) / name
            try:
                regular = stat.S_ISREG(path.lstat().st_mode)  # no links, sockets or pipes
            except FileNotFoundError:
                continue
            if regular and path not in left_out:
                found.append(path)
    return found


def read_manifest(archive: tarfile.TarFile) -> Manifest:
    try:
        member = archive.extractfile(MANIFEST)
        if member is None:
            raise KeyError(MANIFEST)
        values = json.loads(member.read())
        if int(values["format"]) > FORMAT:
            raise BackupError(
                f"this backup was made by a newer Eonyx ({values.get('eonyx_version')}), "
                "in a format this one cannot read: upgrade first"
            )
        return Manifest(**{f.name: values[f.name] for f in fields(Manifest)})
    except (KeyError, ValueError, TypeError, tarfile.TarError) as exc:
        raise BackupError(f"not an Eonyx backup: no readable {MANIFEST} ({exc})") from None


def data_members(archive: tarfile.TarFile, manifest: Manifest) -> list[tarfile.TarInfo]:
    """The archive's data/ files and folders. Any other member (a path outside data/, an
    absolute path, `..`, a link, a device) stops the restore before anything is written."""
    members = []
    for member in archive.getmembers():
        if member.name in (MANIFEST, manifest.database_member) and member.isfile():
            continue
        parts = PurePosixPath(member.name).parts
        inside = len(parts) > 1 and parts[0] == DATA and ".." not in parts
        if not inside or member.name.startswith("/") or not (member.isfile() or member.isdir()):
            raise BackupError(
                f"the archive's member {member.name!r} is not a file inside the store: "
                "nothing was restored"
            )
        members.append(member)
    return members


def _revision(url: str) -> str | None:
    """The newest migration applied, read on a plain engine: Eonyx's own would turn the
    SQLite copy back to WAL mode and add its writers' gate beside it."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def _write(
    out: IO[bytes],
    streaming: bool,
    manifest: Manifest,
    database_copy: Path,
    data_dir: Path,
    files: list[Path],
) -> Manifest:
    """The archive. The manifest goes last, with the number of files actually written: a
    session deleted after the listing is left out."""
    written = 0
    with _tar_writer(out, streaming) as archive:
        archive.add(database_copy, arcname=manifest.database_member, recursive=False)
        for path in files:
            try:
                with path.open("rb") as content:
                    arcname = f"{DATA}/{path.relative_to(data_dir).as_posix()}"
                    info = archive.gettarinfo(arcname=arcname, fileobj=content)
                    archive.addfile(info, content)  # its size when opened: later appends wait
            except FileNotFoundError:
                continue
            written += 1
        manifest = replace(manifest, files=written)
        body = json.dumps(asdict(manifest), indent=2).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode, info.mtime = len(body), 0o600, int(time.time())
        archive.addfile(info, io.BytesIO(body))
    return manifest


def _tar_writer(out: IO[bytes], streaming: bool) -> tarfile.TarFile:
    if streaming:  # a pipe: written in one pass, never sought back
        return tarfile.open(fileobj=out, mode="w|gz")
    return tarfile.open(fileobj=out, mode="w:gz")


@contextmanager
def _atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A new file (0600) beside `path`, renamed over it once written and synced."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        fsync_dir(path.parent)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
