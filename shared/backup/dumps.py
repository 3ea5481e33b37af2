"""A consistent copy of the database in one file, and back.

SQLite is copied with its online backup API: the pages are read under one read transaction,
so the copy is a snapshot while the server goes on writing. PostgreSQL is dumped with
`pg_dump --format=custom` and put back with `pg_restore`. The libpq tools are given the URL
without its password (a command line is visible to every account of the host, in ps): the
password goes in PGPASSWORD. A DATABASE_URL whose `options` set a search_path has its first
schema dumped alone, which is how one PostgreSQL database holds several stores.

Imports shared.core and shared.files.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from shared.backup import BackupError
from shared.files.filestore import fsync_dir
from shared.files.permissions import make_private_dirs

SQLITE, POSTGRESQL = "sqlite", "postgresql"
TOOL_SECONDS = 6 * 3600  # a dump or restore that takes longer than this is stuck


def kind_of(url: str) -> str:
    """ "sqlite" or "postgresql": the databases Eonyx runs on."""
    backend = make_url(url).get_backend_name()
    if backend not in (SQLITE, POSTGRESQL):
        raise BackupError(f"Eonyx backs up SQLite and PostgreSQL databases, not {backend}")
    return backend


def sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupError(f"the SQLite database {url!r} is not a file")
    return Path(database)


def postgres_schema(url: str) -> str | None:
    """The first schema of the search_path that the URL's `options` set, if they do."""
    options = make_url(url).query.get("options")
    words = shlex.split(options if isinstance(options, str) else " ".join(options or ()))
    settings = [w.removeprefix("-c").lstrip() for w in words if w not in ("-c", "--")]
    for setting in settings:
        name, _, value = setting.removeprefix("--").partition("=")
        if name.strip().replace("-", "_") == "search_path":
            schemas = [s.strip().strip('"') for s in value.split(",")]
            return next((s for s in schemas if s and s != "$user"), None)
    return None


def libpq(url: str) -> tuple[str, dict[str, str]]:
    """The URL as libpq reads it (no `+psycopg`, no password), and the environment that
    carries the password."""
    parsed = make_url(url)
    bare = URL.create(
        "postgresql",
        username=parsed.username,
        host=parsed.host,
        port=parsed.port,
        database=parsed.database,
        query=parsed.query,
    )
    env = {"PGPASSWORD": parsed.password} if parsed.password else {}
    return bare.render_as_string(hide_password=False), env


def dump(url: str, destination: Path) -> None:
    """A consistent copy of the database at `url`, written to `destination`."""
    if kind_of(url) == SQLITE:
        _sqlite_dump(sqlite_path(url), destination)
        return
    argv = ["pg_dump", "--format=custom", "--no-password", f"--file={destination}"]
    schema = postgres_schema(url)
    if schema:
        argv.append(f"--schema={schema}")
    _run_tool(argv, url)


def load(url: str, source: Path) -> None:
    """Replace the database at `url` with the copy `dump` wrote to `source`."""
    if kind_of(url) == SQLITE:
        _sqlite_load(source, sqlite_path(url))
        return
    argv = [
        "pg_restore",
        "--clean",
        "--if-exists",
        "--no-owner",
        "--no-privileges",  # the roles granted on the old server may not exist on this one
        "--exit-on-error",
        "--single-transaction",  # all or nothing
        "--no-password",
        str(source),
    ]
    _run_tool(argv, url)


def _sqlite_dump(path: Path, destination: Path) -> None:
    if not path.is_file():
        raise BackupError(f"there is no SQLite database at {path}")
    with (
        contextlib.closing(sqlite3.connect(path, timeout=30)) as source,
        contextlib.closing(sqlite3.connect(destination)) as copy,
    ):
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")  # one file, with no WAL beside it


def _sqlite_load(source: Path, path: Path) -> None:
    """The copy put in place atomically. The old database's WAL and SHM files go first:
    SQLite would otherwise replay the old WAL into the new file."""
    make_private_dirs(path.parent)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".restore", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as data:
            shutil.copyfileobj(data, out)
            out.flush()
            os.fsync(out.fileno())
        for stale in (f"{path}-wal", f"{path}-shm", f"{path}-journal"):
            Path(stale).unlink(missing_ok=True)
        os.replace(temporary, path)
        fsync_dir(path.parent)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _run_tool(argv: list[str], url: str) -> None:
    if shutil.which(argv[0]) is None:
        raise BackupError(
            f"{argv[0]} is not installed: install PostgreSQL's client tools "
            "(the server's major version or newer)"
        )
    target, env = libpq(url)
    try:
        done = subprocess.run(
            [*argv, f"--dbname={target}"],
            env=os.environ | env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TOOL_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise BackupError(f"{argv[0]} did not finish in {TOOL_SECONDS} s") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        said = "; ".join(lines[-3:]) or f"exit status {done.returncode}"
        raise BackupError(f"{argv[0]} failed: {said}")
