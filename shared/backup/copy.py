"""A pilot's SQLite database copied into an empty PostgreSQL one.

Both are first brought to the newest schema, so their tables are the same. Every table but
the session index's is copied, parents before children (the metadata's dependency order),
in one transaction on the target: a copy that fails leaves the target as empty as it was.
Integer keys fed by sequences have their sequence moved past the copied rows, so the next
insert does not collide. The index's tables are then rebuilt from DATA_DIR's session files,
which the PostgreSQL deployment goes on using.

Imports shared.core, shared.files, shared.db and shared.index.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Integer, Table, insert, literal, select, text
from sqlalchemy.exc import SQLAlchemyError

from shared.backup import BackupError, dumps, reindex
from shared.db import orm as _orm  # noqa: F401  (registers the tables on Base.metadata)
from shared.db.database import Base, Database
from shared.index import sync

# The session index: a cache of the session files (shared/index), rebuilt on the target.
INDEX_TABLES = frozenset({"session_index", "session_text", "index_state", "session_moves"})
BATCH = 1000


@dataclass(frozen=True)
class CopyReport:
    rows: dict[str, int]  # table -> rows copied, in the order copied
    index: sync.ReconcileReport


def copied_tables() -> list[Table]:
    return [t for t in Base.metadata.sorted_tables if t.name not in INDEX_TABLES]


def copy_database(source_url: str, target_url: str, data_dir: Path) -> CopyReport:
    if dumps.kind_of(source_url) != dumps.SQLITE:
        raise BackupError("the database to copy from must be SQLite (a pilot's)")
    if dumps.kind_of(target_url) != dumps.POSTGRESQL:
        raise BackupError("the database to copy into must be PostgreSQL")
    if not dumps.sqlite_path(source_url).is_file():
        raise BackupError(f"there is no SQLite database at {dumps.sqlite_path(source_url)}")
    source, target = Database(source_url), Database(target_url)
    try:
        source.migrate()
        target.migrate()
        tables = copied_tables()
        with source.engine.connect() as reading, reading.begin(), target.transaction() as writing:
            _refuse_unless_empty(writing, tables)
            rows = {table.name: _copy_table(reading, writing, table) for table in tables}
            _move_sequences(writing, tables)
        return CopyReport(rows, reindex(target, data_dir))
    finally:
        source.dispose()
        target.dispose()


def _refuse_unless_empty(writing: Connection, tables: list[Table]) -> None:
    full = [
        t.name
        for t in tables
        if writing.execute(select(literal(1)).select_from(t).limit(1)).first()
    ]
    if full:
        raise BackupError(
            f"the PostgreSQL database is not empty ({', '.join(full)} hold rows): "
            "copy into a new, empty database"
        )


def _copy_table(reading: Connection, writing: Connection, table: Table) -> int:
    copied = 0
    try:
        result = reading.execute(select(table)).mappings()
        while batch := result.fetchmany(BATCH):
            writing.execute(insert(table), [dict(row) for row in batch])
            copied += len(batch)
    except SQLAlchemyError as exc:
        said = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["?"])[0]
        raise BackupError(f"copying {table.name} failed, nothing was copied: {said}") from None
    return copied


def _move_sequences(writing: Connection, tables: list[Table]) -> None:
    """Each integer primary key's sequence set past the largest copied key."""
    for table in tables:
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        name, column = table.name, keys[0].name
        writing.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence(:table, :column), "
                f"coalesce((SELECT max({column}) FROM {name}), 0) + 1, false)"
            ),
            {"table": name, "column": column},
        )
