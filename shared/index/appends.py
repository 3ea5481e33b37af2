"""The index write of every turn, in the driver's own SQL.

A turn appends messages and then folds them into its session's row: bump the owner's change
number, log the row's sort key before the write, add the counts, insert the messages' text
(on SQLite indexed for search with the batch it completes: shared.index.fts5). Through
SQLAlchemy's statement machinery those few statements cost about twice what the database
spends running them, on every turn; here they are fixed strings run on a driver connection
of their own (`Database.driver_transaction`). On PostgreSQL the four writes are one
statement (data-modifying CTEs that all see the row as it was), so a turn pays one round
trip for them, after the user's advisory lock.

Turns that end at the same time are written together (`FoldQueue`): the first writes every
fold waiting when it starts, in one transaction, and the others find theirs done. Under 16
concurrent turns that is a few folds a transaction, one commit, one wait for the writer gate
and one reload of pages another process changed, instead of one each.

Only the common case comes here: records without metadata. `shared.index.note_appended`
decides, and keeps the general path (titles, pins, folders) in SQLAlchemy Core.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Dialect

from shared.core.clock import utcnow
from shared.db.database import Database
from shared.index.fts5 import batch_due, catch_up_on
from shared.index.rows import time_binder

_TEXT_COLUMNS = ("user_id", "session_id", "message_id", "role", "body")
_SQLITE_BUMP = "UPDATE index_state SET seq = seq + 1 WHERE user_id = :uid RETURNING seq"
_SQLITE_MOVE = (
    "INSERT INTO session_moves (user_id, session_id, seq, pinned, updated_at, at) "
    "SELECT user_id, id, :seq, pinned, updated_at, :at FROM session_index "
    "WHERE id = :sid AND file_size = :size_before"
)
_SQLITE_FOLD = (
    "UPDATE session_index SET message_count = message_count + :messages, "
    "image_count = image_count + :images, updated_at = coalesce(:updated, updated_at), "
    "file_size = :size, file_mtime_ns = :mtime, seq = coalesce(:seq, seq) "
    "WHERE id = :sid AND user_id = :uid AND file_size = :size_before"
)
_SQLITE_TEXT = (
    "INSERT INTO session_text (user_id, session_id, message_id, role, body) VALUES {rows} "
    "ON CONFLICT (session_id, message_id) DO NOTHING RETURNING id"
)
_POSTGRES_LOCK = "SELECT pg_advisory_xact_lock(%(lock_class)s, %(lock_key)s)"
# One statement: every CTE sees the rows as they were before it, so the move logs the old
# sort key, and the text goes in only when the row was the one expected.
_POSTGRES_FOLD = """
WITH bumped AS (
    UPDATE index_state SET seq = seq + 1 WHERE user_id = %(uid)s RETURNING seq
), moved AS (
    INSERT INTO session_moves (user_id, session_id, seq, pinned, updated_at, at)
    SELECT s.user_id, s.id, b.seq, s.pinned, s.updated_at, %(at)s
    FROM session_index AS s, bumped AS b
    WHERE s.id = %(sid)s AND s.file_size = %(size_before)s
), folded AS (
    UPDATE session_index SET message_count = message_count + %(messages)s,
        image_count = image_count + %(images)s,
        updated_at = coalesce(%(updated)s, updated_at),
        file_size = %(size)s, file_mtime_ns = %(mtime)s,
        seq = coalesce((SELECT seq FROM bumped), seq)
    WHERE id = %(sid)s AND user_id = %(uid)s AND file_size = %(size_before)s
    RETURNING id
), texts AS (
    INSERT INTO session_text (user_id, session_id, message_id, role, body)
    SELECT %(uid)s, %(sid)s, m, r, b
    FROM unnest(%(message_ids)s::text[], %(roles)s::text[], %(bodies)s::text[]) AS d(m, r, b)
    WHERE EXISTS (SELECT 1 FROM folded)
    ON CONFLICT (session_id, message_id) DO NOTHING
)
SELECT count(*) FROM folded
"""


def fold_messages(
    cursor: Any,
    dialect: Dialect,
    params: dict[str, Any],
    docs: Sequence[dict[str, Any]],
    *,
    at: datetime,
) -> bool:
    """Fold a turn's appended messages into the session's row, with `cursor` in a transaction
    (see `shared.index.note_appended` for `params` and the meaning of False: then nothing
    was written but the owner's change number, which only says that something may have
    changed); `docs` are their searchable rows."""
    bind = time_binder(dialect)
    values = params | {"updated": bind(params["updated"]), "at": bind(at)}
    if dialect.name == "postgresql":
        values |= {
            "message_ids": [doc["message_id"] for doc in docs],
            "roles": [doc["role"] for doc in docs],
            "bodies": [doc["body"] for doc in docs],
        }
        cursor.execute(_POSTGRES_LOCK, values)
        cursor.execute(_POSTGRES_FOLD, values)
        return bool(cursor.fetchone()[0] == 1)
    cursor.execute(_SQLITE_BUMP, values)
    bumped = cursor.fetchone()
    values["seq"] = bumped[0] if bumped else None
    if bumped:
        cursor.execute(_SQLITE_MOVE, values)
    cursor.execute(_SQLITE_FOLD, values)
    if cursor.rowcount != 1:
        return False
    if docs:
        rows = ", ".join(["(?, ?, ?, ?, ?)"] * len(docs))
        flat = [doc[key] for doc in docs for key in _TEXT_COLUMNS]
        cursor.execute(_SQLITE_TEXT.format(rows=rows), flat)
        ids = [row[0] for row in cursor.fetchall()]
        if ids and batch_due(ids):  # the FTS table takes texts in batches (fts5.py)
            catch_up_on(cursor)
    return True


@dataclass
class Fold:
    """One turn's fold (`fold_messages`' `params` and `docs`), waiting to be written."""

    params: dict[str, Any]
    docs: Sequence[dict[str, Any]]
    done: bool = False
    folded: bool = False  # written: the row was the one expected
    error: Exception | None = None


class FoldQueue:
    """The folds of one database's turns, written a transaction at a time by the turns
    themselves: whoever holds `_writing` writes everything queued, so a turn that queued
    behind a write either finds its fold done or writes the next batch itself. No thread of
    its own, and no wait when only one turn ends at a time."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._queued: list[Fold] = []
        self._queue_lock = threading.Lock()
        self._writing = threading.Lock()

    def fold(self, fold: Fold) -> bool:
        """Write `fold` (with whatever else is queued): False if the row was not the one
        expected; the database's error if the transaction failed."""
        with self._queue_lock:
            self._queued.append(fold)
        with self._writing:
            if not fold.done:
                with self._queue_lock:
                    batch, self._queued = self._queued, []
                self._write(batch)
        if fold.error is not None:
            raise fold.error
        return fold.folded

    def _write(self, batch: list[Fold]) -> None:
        dialect = self._database.engine.dialect
        try:
            with self._database.driver_transaction() as cursor:
                # PostgreSQL takes each owner's advisory lock: always in the same order.
                for fold in sorted(batch, key=lambda f: str(f.params["uid"])):
                    at = utcnow()
                    fold.folded = fold_messages(cursor, dialect, fold.params, fold.docs, at=at)
        except Exception as exc:  # noqa: BLE001 - raised again in every turn of the batch
            for fold in batch:
                fold.error = exc
        finally:
            for fold in batch:
                fold.done = True
