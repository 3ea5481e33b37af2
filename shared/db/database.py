"""Database engine, sessions and migrations (SQLAlchemy 2 + Alembic).

SQLite by default (a file in DATA_DIR), PostgreSQL in production. The schema is owned by the
Alembic migrations in shared/db/migrations; `migrate()` brings a database to the newest one.

Imports only shared.core.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    Connection,
    DateTime,
    Dialect,
    Engine,
    Table,
    TypeDecorator,
    create_engine,
    event,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from shared.core.errors import StorageError
from shared.db.sqlite_writers import WriterGate, gated_connection

MIGRATIONS = Path(__file__).with_name("migrations")
MIGRATE_LOCK = 0x656F6E7978  # "eonyx": the advisory lock key migrations serialise on

# What functions that only run Core statements take: an ORM session inside a larger unit of
# work, or a bare connection on a hot path (a turn), which skips the ORM's bookkeeping.
Executor = Session | Connection


def connection_of(db: Executor) -> Connection:
    return db if isinstance(db, Connection) else db.connection()


@contextmanager
def driver_cursor(db: Executor) -> Iterator[Any]:
    """A cursor of the driver's own connection, in the transaction `db` is in: for the few
    statements of every turn, where SQLAlchemy's statement machinery costs more than the
    database's own work. A driver error comes out as SQLAlchemy's, as from `db.execute`."""
    connection = connection_of(db)
    driver_error = connection.dialect.loaded_dbapi.Error
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        yield cursor
    except driver_error as exc:
        raise DBAPIError.instance(None, None, exc, driver_error) from exc
    finally:
        cursor.close()


def dialect_of(db: Executor) -> str:
    return connection_of(db).dialect.name


def insert_for(dialect: str) -> Callable[[Table], Any]:
    """The dialect's INSERT, which has `on_conflict_do_update` / `on_conflict_do_nothing`
    (PostgreSQL's and SQLite's spell them alike)."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def upsert(db: Executor, table: Table, rows: list[dict[str, Any]], keys: list[str]) -> None:
    """INSERT ... ON CONFLICT (keys) DO UPDATE, in Core: no ORM bookkeeping or SELECT first,
    and concurrent writers of one row never collide."""
    if rows:
        statement = _upsert_statement(dialect_of(db), table, tuple(rows[0]), tuple(keys))
        db.execute(statement, rows)


@functools.cache
def _upsert_statement(
    dialect: str, table: Table, columns: tuple[str, ...], keys: tuple[str, ...]
) -> Any:
    """Built once per shape: building it costs as much as running it on SQLite."""
    statement = insert_for(dialect)(table)
    updated = {name: statement.excluded[name] for name in columns if name not in keys}
    return statement.on_conflict_do_update(index_elements=list(keys), set_=updated)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite forgets the zone otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime}


# What a database says when its disk refuses a write: SQLite's messages, PostgreSQL's states
# (53100 disk_full, 25006 read_only_sql_transaction, 58030 io_error).
SQLITE_REFUSALS = ("database or disk is full", "readonly database", "disk i/o error")
POSTGRES_REFUSALS = {"53100", "25006", "58030"}


def _disk_refused(context: ExceptionContext) -> None:
    """A write the database's disk refused is a StorageError (503, "the disk refused a
    write"), as one the session store's disk refuses is; not a bug's 500."""
    original = context.original_exception
    first_line = str(original).strip().splitlines()[0] if str(original).strip() else ""
    refused = getattr(original, "sqlstate", None) in POSTGRES_REFUSALS or any(
        words in first_line.lower() for words in SQLITE_REFUSALS
    )
    if refused:
        raise StorageError(f"the database cannot write: {first_line}") from original


def make_engine(url: str) -> Engine:
    engine = _make_engine(url)
    event.listen(engine, "handle_error", _disk_refused)
    return engine


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        connect_args: dict[str, object] = {"timeout": 30, "check_same_thread": False}
        path = make_url(url).database
        gate = None
        if path and path != ":memory:" and not path.startswith("file:"):
            _create_private(path)
            gate = WriterGate(path)  # writers queue instead of polling (sqlite_writers.py)
            connect_args["factory"] = gated_connection(gate)
        engine = create_engine(url, connect_args=connect_args)
        if gate is not None:
            event.listen(engine, "engine_disposed", lambda _engine: gate.close())

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            # Deleted content is overwritten with zeros, not left in free pages (many builds,
            # Debian's among them, do so already): a deleted account's text is gone.
            cursor.execute("PRAGMA secure_delete=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _create_private(path: str) -> None:
    """Create the database file 0600 before SQLite does (it would make it 0644 less the
    umask): it holds password hashes and every message's text. SQLite gives the WAL and SHM
    files the database file's mode."""
    with contextlib.suppress(OSError):  # SQLite says what is wrong when it opens the file
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))


class Database:
    """An engine and its session factory; `db.session()` is one transaction (ORM), and so is
    `db.transaction()` (Core only)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def writers(self) -> int:
        """How many transactions a bulk job (an index rebuild) usefully writes in at once:
        one on SQLite, whose writers take turns; on PostgreSQL one per core, up to four, as
        the server works on each beside this process."""
        if self.engine.dialect.name == "sqlite":
            return 1
        return min(4, os.cpu_count() or 1)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._factory.begin() as session:
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction on a bare connection, for Core statements on a hot path: no ORM
        session is built, and no `after_commit` callback runs."""
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def driver_transaction(self) -> Iterator[Any]:
        """One transaction on a driver connection straight from the pool, and its cursor: for
        the few fixed statements of every turn's index write. No SQLAlchemy Connection or
        Transaction is built; with 16 turns at once those cost about as much CPU as the
        statements themselves. Commits when the block ends, rolls back when it raises; a
        driver error comes out as SQLAlchemy's, as from `Connection.execute`."""
        connection = self.engine.raw_connection()
        driver_error = self.engine.dialect.loaded_dbapi.Error
        try:
            cursor = connection.cursor()
            try:
                yield cursor
                connection.commit()
            except BaseException:
                connection.rollback()
                raise
            finally:
                cursor.close()
        except driver_error as exc:
            raise DBAPIError.instance(None, None, exc, driver_error) from exc
        finally:
            connection.close()

    def checkpoint(self) -> bool:
        """SQLite: copy the write-ahead log into the database file and truncate it to zero
        bytes (`PRAGMA wal_checkpoint(TRUNCATE)`), so what was deleted no longer lingers in
        `<database>-wal` until SQLite reuses its frames. Whether it completed: False when a
        reader still held the log (it is then checkpointed as far as it could be). Nothing
        to do on PostgreSQL (True)."""
        if self.engine.dialect.name != "sqlite":
            return True
        connection = self.engine.raw_connection()
        try:
            cursor = connection.cursor()
            try:
                busy, _frames, _done = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                cursor.close()
        finally:
            connection.close()
        return not busy

    def migrate(self) -> None:
        """Upgrade the schema to the newest migration (safe to call on every start, and from
        several replicas at once: on PostgreSQL they take turns on an advisory lock)."""
        config = alembic_config()
        with self.engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK}
                )
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def schema_is_current(self) -> bool:
        """Whether the newest migration is applied (a worker waits for it: the API migrates)."""
        script = ScriptDirectory.from_config(alembic_config())
        with self.engine.connect() as connection:
            applied = set(MigrationContext.configure(connection).get_current_heads())
        return applied == set(script.get_heads())

    def after_commit(self, callback: Callable[[Session], None]) -> None:
        """Call `callback(session)` after every commit of this database's sessions."""
        event.listen(self._factory, "after_commit", callback)

    def dispose(self) -> None:
        self.engine.dispose()


def knows_revision(revision: str) -> bool:
    """Whether `revision` is one of this release's migrations (a newer release's is not)."""
    script = ScriptDirectory.from_config(alembic_config())
    return any(known.revision == revision for known in script.walk_revisions())


def alembic_config() -> Config:
    """Alembic's configuration for the project's migrations; the caller puts the connection
    in `attributes["connection"]` (`Database.migrate`)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config
