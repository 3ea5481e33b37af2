"""PostgreSQL's full-text engine: a generated tsvector column (`simple`: no stemming, no
stop words, like FTS5's unicode61) with a GIN index, each lexeme starting with its owner's
key (`owner_key`, migration 0015); PostgreSQL keeps it, so the write hooks do nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, text

from shared.db.database import Executor, driver_cursor
from shared.db.orm import SessionText
from shared.index import rows
from shared.index.fulltext import Row, Term, fetch_rows

OWNER_KEY_CHARS = 8  # the owner's key that starts each lexeme (migration 0015)
PROBE = 4000  # a word in fewer of the user's texts is read from the GIN index...
WALK = 5  # ...else the user's texts newest first, up to this many windows


def owner_key(user_id: str) -> str:
    """What every lexeme of a user's texts starts with (migration 0015 computes it in SQL:
    left(md5(user_id), OWNER_KEY_CHARS))."""
    return hashlib.md5(user_id.encode(), usedforsecurity=False).hexdigest()[:OWNER_KEY_CHARS]


def _owned_tsquery_term(key: str, term: Term) -> str:
    """A term as a tsquery of the owner's lexemes, written as lexemes (quoted, no parsing):
    the words are lower case letters and digits already (shared.index.query)."""
    forms = ["'" + key + word + "'" + (":*" if term.prefix else "") for word in term.forms]
    return forms[0] if len(forms) == 1 else "(" + " | ".join(forms) + ")"


def _one(db: Executor, sql: str, params: Mapping[str, Any]) -> Any:
    return rows.fetch(db, sql, params)[0][0]


_TEXT_COLUMNS = ("user_id", "session_id", "message_id", "role", "body")
# A batch of texts in one statement, its columns as arrays: an executemany is a statement a
# row, which cost the server more than the rows themselves (a rebuild at 20 users x 1,000
# sessions: 1,570 sessions/s, 2,000-2,600 this way).
_INSERT = (
    f"INSERT INTO session_text ({', '.join(_TEXT_COLUMNS)}) SELECT * FROM unnest("
    + ", ".join(f"%({name})s::text[]" for name in _TEXT_COLUMNS)
    + ") ON CONFLICT (session_id, message_id) DO NOTHING"
)
_MATCHES = "(SELECT * FROM session_text WHERE tsv @@ CAST(:q AS tsquery) OFFSET 0) AS t"
# How many texts of the user match, counted up to PROBE (another user's with the same key
# counts too: it only tips the choice).
_COUNT = f"SELECT count(*) FROM (SELECT 1 FROM {_MATCHES} WHERE true {{older}}LIMIT :p) AS c"
_BY_GIN = (
    f"SELECT t.id, t.session_id, t.message_id, t.role, t.body FROM {_MATCHES} "
    "WHERE t.user_id = :u {older}ORDER BY t.id DESC LIMIT :w"
)
# The user's texts newest first on (user_id, id). user_id as a range, and ordered by: with
# `user_id = :u` the planner walked the primary key backwards instead, reading every other
# user's newer texts (189,000 rows for 8,700 of the user's, 95 ms), and any join or outer
# condition it could, it answered from the GIN index (a hash join, 22 ms).
_NEWEST = (
    "(SELECT {columns} FROM session_text AS t WHERE t.user_id >= :u AND t.user_id <= :u "
    "{older}ORDER BY t.user_id DESC, t.id DESC LIMIT :n) AS t"
)
_WALK = (
    "SELECT t.id, t.session_id, t.message_id, t.role, t.body FROM "
    + _NEWEST.replace("{columns}", "*")
    + " WHERE t.tsv @@ CAST(:q AS tsquery) ORDER BY t.user_id DESC, t.id DESC LIMIT :w"
)
_WALKED = "SELECT min(t.id) FROM " + _NEWEST.replace("{columns}", "t.user_id, t.id")


class PostgresEngine:
    """Every lexeme of `tsv` starts with its owner's key (`owner_key`, migration 0015), so a
    word's GIN posting list is one user's: a prefix gathers that user's matches only. Two
    plans, chosen by how many texts of the user match, counted through the GIN index up to
    PROBE (cheap: no more rows than that are read):

    - fewer: all of them from the GIN index, sorted by id (fewer than PROBE rows);
    - as many or more: the user's texts newest first on (user_id, id), each matched, up to
      WALK times the window (a word in a fifth of the texts fills a window in 5x its size);
      a word too rare for that still needs the older rest, read from the GIN index.

    The planner cannot choose between them itself: it estimates any prefix at a fixed
    share of the rows, so it took the GIN bitmap for a word in 90% of the texts (20 ms
    against 5 ms newest first at 20,000 texts of a user). The GIN scan is kept apart from
    the user_id condition (OFFSET 0): otherwise the planner ANDs it with the (user_id, id)
    index, every text of the user read to no purpose (the key already names the user).
    The generated column keeps itself."""

    def candidates(
        self,
        db: Executor,
        user_id: str,
        terms: Sequence[Term],
        *,
        before: int | None,
        window: int,
    ) -> list[Row]:
        key = owner_key(user_id)
        query = " & ".join(_owned_tsquery_term(key, t) for t in terms)
        params = {"q": query, "u": user_id, "before": before, "w": window}
        older = "AND t.id < :before " if before is not None else ""
        matched = _one(db, _COUNT.format(older=older), params | {"p": PROBE})
        if matched < PROBE:
            return fetch_rows(db, _BY_GIN.format(older=older), params)
        found = fetch_rows(db, _WALK.format(older=older), params | {"n": WALK * window})
        if len(found) == window:
            return found
        # The walk ended before a window's worth: the older rest from the GIN index.
        walked = _one(db, _WALKED.format(older=older), params | {"n": WALK * window})
        if walked is None:
            return found
        rest = {"before": walked, "w": window - len(found)}
        return found + fetch_rows(db, _BY_GIN.format(older="AND t.id < :before "), params | rest)

    def insert(self, db: Executor, docs: Sequence[Mapping[str, Any]]) -> None:
        columns = {name: [doc[name] for doc in docs] for name in _TEXT_COLUMNS}
        with driver_cursor(db) as cursor:
            cursor.execute(_INSERT, columns)

    def behind(self, db: Executor) -> bool:
        return False

    def catch_up(self, db: Executor) -> None:
        pass

    def delete(self, db: Executor, condition: ColumnElement[bool]) -> None:
        db.execute(delete(SessionText).where(condition))

    def delete_all(self, db: Executor) -> None:
        # TRUNCATE, not DELETE: the rebuild that follows writes into an empty table and an
        # empty GIN index rather than beside every dead row and entry until a vacuum (bench
        # rebuild, 100 users x 200 sessions: 1,320 -> 1,583 sessions/s). It takes the table's
        # exclusive lock: it waits for the index writes and searches under way, and the next
        # ones wait for the drop's commit (an admin's `index rebuild --drop`, a short one).
        db.execute(text("TRUNCATE session_text"))

    def purge(self, db: Executor, user_id: str) -> None:
        pass  # the tsvector is a column of the deleted row


POSTGRES = PostgresEngine()
