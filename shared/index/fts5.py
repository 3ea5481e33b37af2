"""SQLite's full-text engine: an FTS5 table over `session_text` (external content,
`detail=column`: no positions, as every query word is a single token).

It is kept by hand, not by triggers, and in batches: a small FTS5 write costs about as much
as the rest of a turn's index write (seven pages of a commit's nineteen), and a batch of
BATCH texts little more than one. So the texts are indexed when their ids pass a multiple of
BATCH (one INSERT ... SELECT for all the texts above the watermark in
`session_text_fts_state`), and before every search (`catch_up`), which therefore always sees
every text. Texts below the watermark are in the FTS table, those above it not yet: only the
former are deleted from it, and deleting the newest texts lowers the watermark, so a reused
id is never taken for an indexed one.

Beside it, `session_words`, each user's vocabulary (`vocabulary_of` says which words), kept
with the batches: a word's forms are named from it (`"otter" OR "otters"`), since FTS5
answers a prefix (`"otter"*`) by gathering the whole doclist of every word it starts,
seventy times the cost of naming them when the word is in most texts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Table,
    column,
    delete,
    insert,
    literal,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from shared.db.database import Executor, driver_cursor
from shared.db.orm import SessionText
from shared.index import rows
from shared.index.fulltext import Row, Term, fetch_rows

FTS = "session_text_fts"
STATE = f"{FTS}_state"  # one row, `indexed_upto`, the highest id in the FTS table
BATCH = 64  # texts are indexed when their ids pass a multiple of this
PROBE = 256  # a word's matches among every user's texts read before the user's own
WORDS = "session_words"  # (user_id, word), each user's vocabulary
MAX_FORMS = 32  # a prefix starting more of the user's words is matched as a prefix
MIN_FORM = 3  # the vocabulary keeps words starting with this many letters...
MAX_FORM = 100  # ...and no longer than this (longer runs are not words)
_TOKEN = re.compile(r"[^\W_]+")  # unicode61's tokens: runs of letters and digits
_INDEXED = (SessionText.id, SessionText.body, SessionText.user_id, SessionText.role)
_FTS_TABLE = table(FTS, *(column(name) for name in (FTS, "rowid", "body", "user_id", "role")))
_MARK = f"(SELECT indexed_upto FROM {STATE})"
_NEWEST = "(SELECT coalesce(max(id), 0) FROM session_text)"
_BEHIND = f"SELECT 1 FROM {STATE} WHERE indexed_upto < {_NEWEST}"
# The texts above the watermark into the FTS table, then the watermark up to the newest.
_CATCH_UP = (
    f"INSERT INTO {FTS} (rowid, body, user_id, role) SELECT id, body, user_id, role "
    f"FROM session_text WHERE id > {_MARK}",
    f"UPDATE {STATE} SET indexed_upto = {_NEWEST}",
)
_WAITING = f"SELECT user_id, body FROM session_text WHERE id > {_MARK}"
_ADD_WORDS = f"INSERT OR IGNORE INTO {WORDS} (user_id, word) VALUES (?, ?)"
# After a delete: never above the newest text left, so the next new id is above it.
_LOWER_MARK = text(f"UPDATE {STATE} SET indexed_upto = min(indexed_upto, {_NEWEST})")
_INSERT = (
    sqlite_insert(cast(Table, SessionText.__table__))
    .on_conflict_do_nothing(index_elements=["session_id", "message_id"])
    .returning(SessionText.id)
)
_FORMS = f"SELECT word FROM {WORDS} WHERE user_id = :u AND word >= :low AND word < :high LIMIT :n"


def vocabulary_of(body: str) -> set[str]:
    """The words of `body` that a prefix may name: lower case, starting with MIN_FORM
    letters (a search's word-form prefix always does: shared.index.query), at most MAX_FORM
    characters. FTS5's unicode61 splits text where this does, so every indexed word a
    prefix starts is among these."""
    return {
        word
        for word in _TOKEN.findall(body.lower())
        if word[:MIN_FORM].isalpha() and len(word) <= MAX_FORM
    }


def _named_forms(db: Executor, user_id: str, term: Term) -> tuple[str, ...] | None:
    """The user's words a prefix term starts, at most MAX_FORMS of them (`()`: none); None
    when the term is a whole word, or starts more words than that, or starts with fewer
    than MIN_FORM letters (then FTS5 matches it as it is)."""
    if not term.prefix or not all(f[:MIN_FORM].isalpha() for f in term.forms):
        return None
    named: set[str] = set()
    for form in term.forms:
        high = form[:-1] + chr(ord(form[-1]) + 1)
        params = {"u": user_id, "low": form, "high": high, "n": MAX_FORMS + 1}
        named.update(word for (word,) in rows.fetch(db, _FORMS, params))
    return tuple(sorted(named)) if len(named) <= MAX_FORMS else None


def catch_up_on(cursor: Any) -> None:
    """Index every text above the watermark and add its words to its owner's vocabulary, on
    a cursor of the driver's own (a turn's index write runs it on its own:
    shared.index.appends)."""
    cursor.execute(_WAITING)
    words = {(user_id, w) for user_id, body in cursor.fetchall() for w in vocabulary_of(body)}
    if words:
        cursor.executemany(_ADD_WORDS, sorted(words))
    for sql in _CATCH_UP:
        cursor.execute(sql)


def batch_due(ids: Sequence[int]) -> bool:
    """Whether the ids just inserted pass a multiple of BATCH (time to index)."""
    return (min(ids) - 1) // BATCH != max(ids) // BATCH


def _fts5_term(term: Term) -> str:
    forms = [f'"{word}"' + ("*" if term.prefix else "") for word in term.forms]
    return forms[0] if len(forms) == 1 else "(" + " OR ".join(forms) + ")"


class SqliteEngine:
    """The owner's id is an indexed column, so the match itself can be per user; a word
    found fewer than PROBE times among every user's texts is matched alone."""

    def candidates(
        self,
        db: Executor,
        user_id: str,
        terms: Sequence[Term],
        *,
        before: int | None,
        window: int,
    ) -> list[Row]:
        named = [_named_forms(db, user_id, term) for term in terms]
        if any(forms == () for forms in named):
            return []  # a word none of the user's texts has
        words = " AND ".join(
            _fts5_term(t) if forms is None else "(" + " OR ".join(f'"{f}"' for f in forms) + ")"
            for t, forms in zip(terms, named, strict=True)
        )
        # The words alone first, every user's newest matches (another user's text comes back
        # as its id alone), PROBE of them, then as many more as the user's share of those
        # says the window needs, while that is under twice the window. The rest is matched
        # with the owner's id too: FTS5 reads an AND newest first by walking the doclist of
        # every text of theirs (12 ms at 400,000 texts), where the words alone cost a few
        # microseconds a match.
        found: list[Row] = []
        chunk, read = min(PROBE, window), 0
        while True:
            probed = fetch_rows(
                db,
                "SELECT c.rid, t.session_id, t.message_id, t.role, t.body FROM "
                f"(SELECT rowid AS rid FROM {FTS} WHERE {FTS} MATCH :m "
                f"{'AND rowid < :before ' if before is not None else ''}"
                "ORDER BY rowid DESC LIMIT :p) AS c "
                "LEFT JOIN session_text AS t ON t.id = c.rid AND t.user_id = :u",
                {"m": f"body:({words})", "u": user_id, "before": before, "p": chunk},
            )
            found += [row for row in probed if row[1] is not None]
            read += len(probed)
            if len(found) > window:  # the newest `window`; sorted here, as SQL would sort
                return sorted(found, reverse=True)[:window]  # the bodies too (twice the cost)
            if len(probed) < chunk or len(found) == window:
                return found
            before = min(row[0] for row in probed)
            needed = (window - len(found)) * read / max(len(found), 1)
            if needed > 2 * window:
                break
            chunk = math.ceil(needed * 1.1)
        # Every match at or above `before` was read: the user's below it follow.
        sql = (
            "SELECT t.id, t.session_id, t.message_id, t.role, t.body FROM "
            f"(SELECT rowid AS rid FROM {FTS} WHERE {FTS} MATCH :m "
            "AND rowid < :before ORDER BY rowid DESC LIMIT :w) AS c "
            "JOIN session_text AS t ON t.id = c.rid WHERE t.user_id = :u"
        )
        params = {
            "m": f'user_id:"{user_id}" AND body:({words})',
            "u": user_id,
            "before": before,
            "w": window - len(found),
        }
        return found + fetch_rows(db, sql, params)

    def insert(self, db: Executor, docs: Sequence[Mapping[str, Any]]) -> None:
        ids = db.execute(_INSERT, docs).scalars().all()  # those really inserted
        if ids and batch_due(ids):
            self.catch_up(db)

    def behind(self, db: Executor) -> bool:
        with driver_cursor(db) as cursor:  # every search: the driver's own, a tenth the cost
            cursor.execute(_BEHIND)
            return cursor.fetchone() is not None

    def catch_up(self, db: Executor) -> None:
        with driver_cursor(db) as cursor:
            catch_up_on(cursor)

    def delete(self, db: Executor, condition: ColumnElement[bool]) -> None:
        indexed = condition & (SessionText.id <= literal_column(_MARK))
        db.execute(
            insert(_FTS_TABLE).from_select(
                [FTS, "rowid", "body", "user_id", "role"],
                select(literal("delete"), *_INDEXED).where(indexed),
            )
        )
        db.execute(delete(SessionText).where(condition))
        db.execute(_LOWER_MARK)

    def delete_all(self, db: Executor) -> None:
        db.execute(text(f"INSERT INTO {FTS}({FTS}) VALUES ('delete-all')"))
        db.execute(delete(SessionText))
        db.execute(text(f"UPDATE {STATE} SET indexed_upto = 0"))
        db.execute(text(f"DELETE FROM {WORDS}"))

    def purge(self, db: Executor, user_id: str) -> None:
        # FTS5 keeps a deleted text's words in its segments until they are merged: an
        # `optimize` merges them all now (it rewrites the index: a rare, admin-made cost).
        # The vocabulary keeps a deleted session's words (a form with no match costs a
        # search nothing), but not a deleted account's.
        db.execute(text(f"DELETE FROM {WORDS} WHERE user_id = :u"), {"u": user_id})
        db.execute(text(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')"))


SQLITE = SqliteEngine()
