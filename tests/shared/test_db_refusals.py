"""A database that refuses a write (SQLite: disk full or read-only; PostgreSQL: disk full,
read-only transaction) raises StorageError, which the API answers 503 `storage_error`,
rather than SQLAlchemy's OperationalError, a 500; other errors pass through unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from shared.core.errors import StorageError
from shared.db.database import Database
from tests.conftest import Backend


@pytest.fixture
def database(backend: Backend) -> Iterator[Database]:
    db = Database(backend.database_url)
    with db.engine.begin() as connection:
        connection.execute(text("CREATE TABLE IF NOT EXISTS refusal_probe (n INTEGER UNIQUE)"))
        connection.execute(text("DELETE FROM refusal_probe"))
    yield db
    db.dispose()


def read_only(connection, backend: Backend) -> None:  # type: ignore[no-untyped-def]
    """What a read-only disk or replica does to this connection's writes."""
    if backend.name == "embedded":
        connection.exec_driver_sql("PRAGMA query_only = ON")
    else:
        connection.execute(text("SET TRANSACTION READ ONLY"))


def test_a_refused_write_is_a_storage_error_naming_the_reason(
    database: Database, backend: Backend
) -> None:
    with database.engine.connect() as connection:
        read_only(connection, backend)
        with pytest.raises(StorageError) as raised:
            connection.execute(text("INSERT INTO refusal_probe VALUES (1)"))
        connection.rollback()
        if backend.name == "embedded":  # the connection goes back to the pool
            connection.exec_driver_sql("PRAGMA query_only = OFF")
    reason = "readonly database" if backend.name == "embedded" else "read-only transaction"
    assert raised.value.message.startswith("the database cannot write: ")
    assert reason in raised.value.message
    with database.engine.begin() as connection:  # the next connection writes as usual
        connection.execute(text("INSERT INTO refusal_probe VALUES (1)"))


def test_other_database_errors_are_left_as_they_are(database: Database) -> None:
    with database.engine.begin() as connection:
        connection.execute(text("INSERT INTO refusal_probe VALUES (2)"))
    with pytest.raises(IntegrityError), database.engine.begin() as connection:
        connection.execute(text("INSERT INTO refusal_probe VALUES (2)"))
