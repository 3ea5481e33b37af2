"""SQLite writers queue on a gate that every process on the machine sees (sqlite_writers.py)."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from shared.db import sqlite_writers
from shared.db.database import Database
from shared.db.sqlite_writers import writes


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'eonyx.db'}")
    with db.transaction() as connection:
        connection.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
    yield db
    db.dispose()


def gate_is_free(database: Database) -> bool:
    """What another process sees: can it take the writers' lock file right now?"""
    fd = os.open(f"{database.engine.url.database}-writers", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing also lets go of the lock if it was taken
    return True


def test_a_write_holds_the_gate_until_its_transaction_ends(database: Database) -> None:
    with database.engine.connect() as connection:
        transaction = connection.begin()
        connection.execute(text("INSERT INTO notes (body) VALUES ('one')"))
        assert not gate_is_free(database)  # every other writer on the machine waits
        transaction.commit()
        assert gate_is_free(database)

        transaction = connection.begin()
        connection.execute(text("UPDATE notes SET body = 'two'"))
        assert not gate_is_free(database)
        transaction.rollback()
        assert gate_is_free(database)


def test_reads_do_not_take_the_gate(database: Database) -> None:
    with database.engine.connect() as connection, connection.begin():
        connection.execute(text("SELECT count(*) FROM notes")).scalar()
        connection.execute(text("WITH n AS (SELECT 1) SELECT * FROM n")).all()
        assert gate_is_free(database)


def test_a_failed_write_lets_the_gate_go(database: Database) -> None:
    with database.transaction() as connection:
        connection.execute(text("INSERT INTO notes (id, body) VALUES (1, 'kept')"))
    with pytest.raises(IntegrityError), database.transaction() as connection:
        connection.execute(text("INSERT INTO notes (id, body) VALUES (1, 'clash')"))
    assert gate_is_free(database)
    with database.transaction() as connection:
        assert connection.execute(text("SELECT body FROM notes")).scalars().all() == ["kept"]


def test_a_writer_stuck_elsewhere_is_waited_for_a_bounded_time(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_writers, "WAIT_SECONDS", 0.3)
    with database.transaction() as connection:  # the gate file exists from here on
        connection.execute(text("INSERT INTO notes (body) VALUES ('first')"))
    other = os.open(f"{database.engine.url.database}-writers", os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)  # another process's writer, hung holding the gate
        with (
            pytest.raises(OperationalError, match="database is locked"),
            database.transaction() as connection,
        ):
            connection.execute(text("INSERT INTO notes (body) VALUES ('waits')"))
    finally:
        os.close(other)
    with database.transaction() as connection:  # once it is gone, writes go on
        connection.execute(text("INSERT INTO notes (body) VALUES ('second')"))
        assert connection.execute(text("SELECT count(*) FROM notes")).scalar() == 2


def test_writers_in_many_threads_all_land(database: Database) -> None:
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(25):
                with database.transaction() as connection:
                    connection.execute(
                        text("INSERT INTO notes (body) VALUES (:b)"), {"b": f"{n}:{i}"}
                    )
        except BaseException as exc:  # noqa: BLE001 - a thread's failure, reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    with database.transaction() as connection:
        assert connection.execute(text("SELECT count(*) FROM notes")).scalar() == 200
    assert gate_is_free(database)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", False),
        ("  select * from notes", False),
        ("PRAGMA journal_mode=WAL", False),
        ("WITH n AS (SELECT 1) SELECT * FROM n", False),
        ("INSERT INTO notes VALUES (1)", True),
        ("UPDATE notes SET body = ''", True),
        ("DELETE FROM notes", True),
        ("WITH n AS (SELECT 1) INSERT INTO notes SELECT * FROM n", True),
        ("CREATE TABLE x (y)", True),
        ("SAVEPOINT sa_1", True),
    ],
)
def test_what_counts_as_a_write(sql: str, expected: bool) -> None:
    assert writes(sql) is expected
