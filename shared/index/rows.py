"""Rows of `session_index` read on the driver's own cursor, for the list and search pages.

Fifty rows through the ORM cost about a millisecond of Python (instances, the identity map,
the statement machinery), several times the database's own work for a page. The pages only
read their rows, so they get `Listed` records instead: the table's columns as attributes,
with the values a SessionRow holds (aware UTC datetimes, booleans), converted by the columns'
own SQLAlchemy types. Statements are written once with `:name` parameters (SQLite's style)
and rewritten for PostgreSQL's driver.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.engine import Dialect

from shared.db.database import Executor, UTCDateTime, connection_of, driver_cursor
from shared.db.orm import SessionRow

_TABLE = cast(Table, SessionRow.__table__)
COLUMNS = tuple(column.name for column in _TABLE.columns)
COLUMN_LIST = ", ".join(COLUMNS)
_PARAM = re.compile(r"(?<![:\w]):(\w+)")


@dataclass(slots=True)
class Listed:
    """A session_index row as a page shows it: SessionRow's columns (a copy: changing it
    changes nothing in the database)."""

    id: str
    user_id: str
    title: str | None
    title_pending: bool
    source: str
    temporary: bool
    pinned: bool
    archived: bool
    folder_id: str | None
    message_count: int
    image_count: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    forked_from: str | None
    imported: str | None
    file_size: int
    file_mtime_ns: int
    seq: int


@functools.cache
def _statement(dialect: str, sql: str) -> str:
    """`sql` in the driver's parameter style: psycopg's `%(name)s` on PostgreSQL."""
    if dialect != "postgresql":
        return sql
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


Converter = Callable[[Any], Any]
_CONVERTERS: dict[tuple[str, str], list[tuple[int, Converter]]] = {}
_BINDERS: dict[tuple[str, str], Callable[[datetime | None], Any]] = {}


def _converters(dialect: Dialect) -> list[tuple[int, Converter]]:
    """(position, result processor) of the columns whose driver value is converted, per
    driver: what SQLAlchemy would apply, looked up once."""
    key = (dialect.name, dialect.driver)
    if key not in _CONVERTERS:
        found: list[tuple[int, Converter]] = []
        for position, column in enumerate(_TABLE.columns):
            process = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if process is not None:
                found.append((position, process))
        _CONVERTERS[key] = found
    return _CONVERTERS[key]


def time_binder(dialect: Dialect) -> Callable[[datetime | None], Any]:
    """A UTC datetime as the column stores it (SQLite: naive text), as SQLAlchemy binds it."""
    key = (dialect.name, dialect.driver)
    if key not in _BINDERS:
        process = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
        _BINDERS[key] = process if process is not None else (lambda value: value)
    return _BINDERS[key]


def reader(db: Executor) -> Callable[[Sequence[Any]], Listed]:
    """A row of the driver's values (COLUMNS first) as a Listed record."""
    converters = _converters(connection_of(db).dialect)
    width = len(COLUMNS)

    def read(row: Sequence[Any]) -> Listed:
        values = list(row[:width])
        for position, convert in converters:
            values[position] = convert(values[position])
        return Listed(*values)

    return read


def listed(
    db: Executor, sql: str, params: Mapping[str, Any], extra: int = 0
) -> list[tuple[Listed, tuple[Any, ...]]]:
    """Run `sql` (a SELECT of COLUMNS, then `extra` more columns) on the driver's cursor:
    each row as a Listed record and its extra values."""
    read, width = reader(db), len(COLUMNS)
    return [(read(row), tuple(row[width : width + extra])) for row in fetch(db, sql, params)]


def id_list(ids: Sequence[str]) -> tuple[str, dict[str, str]]:
    """`(:id0, :id1, ...)` and its parameters."""
    marks = ", ".join(f":id{n}" for n in range(len(ids)))
    return f"({marks})", {f"id{n}": value for n, value in enumerate(ids)}


def by_id(db: Executor, ids: Sequence[str]) -> list[Listed]:
    """The rows with these ids, in no order."""
    rows: list[Listed] = []
    for start in range(0, len(ids), 500):
        marks, params = id_list(ids[start : start + 500])
        sql = f"SELECT {COLUMN_LIST} FROM session_index WHERE id IN {marks}"
        rows += [row for row, _ in listed(db, sql, params)]
    return rows


def fetch(db: Executor, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """Rows as the driver gives them (no conversion), from `sql` in SQLite's style."""
    with driver_cursor(db) as cursor:
        cursor.execute(_statement(connection_of(db).dialect.name, sql), params)
        return cast(list[Any], cursor.fetchall())


def bind_time(db: Executor, moment: datetime | None) -> Any:
    return time_binder(connection_of(db).dialect)(moment)
