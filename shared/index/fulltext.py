"""The full-text engines behind shared.index.search, one interface for both backends.

- SQLite: an FTS5 table over `session_text` (external content, `detail=column`: no
  positions, as every query word is a single token). It is kept by hand, not by triggers,
  and in batches: a small FTS5 write costs about as much as the rest of a turn's index write
  (seven pages of a commit's nineteen), and a batch of BATCH texts little more than one. So
  the texts are indexed when their ids pass a multiple of BATCH (one INSERT ... SELECT for
  all the texts above the watermark in `session_text_fts_state`), and before every search
  (`catch_up`), which therefore always sees every text. Texts below the watermark are in
  the FTS table, those above it not yet: only the former are deleted from it, and deleting
  the newest texts lowers the watermark, so a reused id is never taken for an indexed one.
  Beside it, `session_words`, each user's vocabulary (`vocabulary_of` says which words),
  kept with the batches: a word's forms are named from it (`"otter" OR "otters"`), since
  FTS5 answers a prefix (`"otter"*`) by gathering the whole doclist of every word it starts,
  seventy times the cost of naming them when the word is in most texts.
- PostgreSQL: a generated tsvector column (`simple`: no stemming, no stop words, like FTS5's
  unicode61) with a GIN index, each lexeme starting with its owner's key (`owner_key`);
  PostgreSQL keeps it, so the write hooks do nothing.

Both find a user's matching rows newest first (by id), a window at a time.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from sqlalchemy import (
    ColumnElement,
    column,
    delete,
    insert,
    literal,
    literal_column,
    select,
    table,
    text,
)

from shared.db.database import Executor, dialect_of, driver_cursor
from shared.db.orm import SessionText
from shared.index import rows

Row = tuple[int, str, str, str, str]  # id, session_id, message_id, role, body
FTS = "session_text_fts"
STATE = f"{FTS}_state"  # SQLite: one row, `indexed_upto`, the highest id in the FTS table
BATCH = 64  # SQLite: texts are indexed when their ids pass a multiple of this
PROBE = 256  # SQLite: a word's matches among every user's texts read before the user's own
WORDS = "session_words"  # SQLite: (user_id, word), each user's vocabulary
MAX_FORMS = 32  # SQLite: a prefix starting more of the user's words is matched as a prefix
MIN_FORM = 3  # SQLite: the vocabulary keeps words starting with this many letters...
MAX_FORM = 100  # ...and no longer than this (longer runs are not words)
OWNER_KEY_CHARS = 8  # PostgreSQL: the owner's key that starts each lexeme (migration 0015)
PG_PROBE = 4000  # PostgreSQL: a word in fewer of the user's texts is read from the GIN index
PG_WALK = 5  # PostgreSQL: ...else the user's texts newest first, up to this many windows
_TOKEN = re.compile(r"[^\W_]+")  # unicode61's tokens: runs of letters and digits


@dataclass(frozen=True)
class Term:
    """A query word: `word`, or a word starting with it when `prefix`; `also` is another
    form matched the same way (a plural in -ies: "story" and "stories")."""

    word: str  # lower case, letters and digits only
    prefix: bool
    also: str = ""

    @property
    def forms(self) -> tuple[str, ...]:
        return (self.word, self.also) if self.also else (self.word,)


class Engine(Protocol):
    def candidates(
        self,
        db: Executor,
        user_id: str,
        terms: Sequence[Term],
        *,
        before: int | None,
        window: int,
    ) -> list[Row]:
        """The newest `window` of the user's rows that have every term (in no given order),
        with ids below `before` when given."""
        ...

    # Whether `index` needs the ids of the rows just inserted (INSERT ... RETURNING).
    wants_ids: bool

    def index(self, db: Executor, ids: Sequence[int]) -> None:
        """The rows with these ids were just inserted: index them, now or with a batch."""
        ...

    def behind(self, db: Executor) -> bool:
        """Whether rows wait to be indexed (then a search catches up first)."""
        ...

    def catch_up(self, db: Executor) -> None:
        """Index every row not indexed yet."""
        ...

    def delete(self, db: Executor, condition: ColumnElement[bool]) -> None:
        """Delete the rows matching `condition`, and forget them."""
        ...

    def delete_all(self, db: Executor) -> None: ...

    def purge(self, db: Executor, user_id: str) -> None:
        """Drop what the user's deleted rows left in the index itself (an account's
        deletion)."""
        ...


def _rows(db: Executor, sql: str, params: Mapping[str, Any]) -> list[Row]:
    """Rows straight from the driver: thousands of them per search, so no ORM on the way."""
    return cast(list[Row], rows.fetch(db, sql, params))


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
    """SQLite: index every text above the watermark and add its words to its owner's
    vocabulary, on a cursor of the driver's own (a turn's index write runs it on its own:
    shared.index.appends)."""
    cursor.execute(_WAITING)
    words = {(user_id, w) for user_id, body in cursor.fetchall() for w in vocabulary_of(body)}
    if words:
        cursor.executemany(_ADD_WORDS, sorted(words))
    for sql in _CATCH_UP:
        cursor.execute(sql)


def batch_due(ids: Sequence[int]) -> bool:
    """Whether the ids just inserted pass a multiple of BATCH (SQLite: time to index)."""
    return (min(ids) - 1) // BATCH != max(ids) // BATCH


def _fts5_term(term: Term) -> str:
    forms = [f'"{word}"' + ("*" if term.prefix else "") for word in term.forms]
    return forms[0] if len(forms) == 1 else "(" + " OR ".join(forms) + ")"


def owner_key(user_id: str) -> str:
    """PostgreSQL: what every lexeme of a user's texts starts with (migration 0015 computes
    it in SQL: left(md5(user_id), OWNER_KEY_CHARS))."""
    return hashlib.md5(user_id.encode(), usedforsecurity=False).hexdigest()[:OWNER_KEY_CHARS]


def _owned_tsquery_term(key: str, term: Term) -> str:
    """A term as a tsquery of the owner's lexemes, written as lexemes (quoted, no parsing):
    the words are lower case letters and digits already (shared.index.query)."""
    forms = ["'" + key + word + "'" + (":*" if term.prefix else "") for word in term.forms]
    return forms[0] if len(forms) == 1 else "(" + " | ".join(forms) + ")"


def _one(db: Executor, sql: str, params: Mapping[str, Any]) -> Any:
    return rows.fetch(db, sql, params)[0][0]


_PG_MATCHES = "(SELECT * FROM session_text WHERE tsv @@ CAST(:q AS tsquery) OFFSET 0) AS t"
# How many texts of the user match, counted up to PG_PROBE (another user's with the same key
# counts too: it only tips the choice).
_PG_PROBE = f"SELECT count(*) FROM (SELECT 1 FROM {_PG_MATCHES} WHERE true {{older}}LIMIT :p) AS c"
_PG_BY_GIN = (
    f"SELECT t.id, t.session_id, t.message_id, t.role, t.body FROM {_PG_MATCHES} "
    "WHERE t.user_id = :u {older}ORDER BY t.id DESC LIMIT :w"
)
# The user's texts newest first on (user_id, id). user_id as a range, and ordered by: with
# `user_id = :u` the planner walked the primary key backwards instead, reading every other
# user's newer texts (189,000 rows for 8,700 of the user's, 95 ms), and any join or outer
# condition it could, it answered from the GIN index (a hash join, 22 ms).
_PG_NEWEST = (
    "(SELECT {columns} FROM session_text AS t WHERE t.user_id >= :u AND t.user_id <= :u "
    "{older}ORDER BY t.user_id DESC, t.id DESC LIMIT :n) AS t"
)
_PG_WALK = (
    "SELECT t.id, t.session_id, t.message_id, t.role, t.body FROM "
    + _PG_NEWEST.replace("{columns}", "*")
    + " WHERE t.tsv @@ CAST(:q AS tsquery) ORDER BY t.user_id DESC, t.id DESC LIMIT :w"
)
_PG_WALKED = "SELECT min(t.id) FROM " + _PG_NEWEST.replace("{columns}", "t.user_id, t.id")


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
            probed = _rows(
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
        return found + _rows(db, sql, params)

    wants_ids = True

    def index(self, db: Executor, ids: Sequence[int]) -> None:
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


class PostgresEngine:
    """Every lexeme of `tsv` starts with its owner's key (`owner_key`, migration 0015), so a
    word's GIN posting list is one user's: a prefix gathers that user's matches only. Two
    plans, chosen by how many texts of the user match, counted through the GIN index up to
    PG_PROBE (cheap: no more rows than that are read):

    - fewer: all of them from the GIN index, sorted by id (fewer than PG_PROBE rows);
    - as many or more: the user's texts newest first on (user_id, id), each matched, up to
      PG_WALK times the window (a word in a fifth of the texts fills a window in 5x its size);
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
        matched = _one(db, _PG_PROBE.format(older=older), params | {"p": PG_PROBE})
        if matched < PG_PROBE:
            return _rows(db, _PG_BY_GIN.format(older=older), params)
        found = _rows(db, _PG_WALK.format(older=older), params | {"n": PG_WALK * window})
        if len(found) == window:
            return found
        # The walk ended before a window's worth: the older rest from the GIN index.
        walked = _one(db, _PG_WALKED.format(older=older), params | {"n": PG_WALK * window})
        if walked is None:
            return found
        rest = {"before": walked, "w": window - len(found)}
        return found + _rows(db, _PG_BY_GIN.format(older="AND t.id < :before "), params | rest)

    wants_ids = False

    def index(self, db: Executor, ids: Sequence[int]) -> None:
        pass

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


POSTGRES, SQLITE = PostgresEngine(), SqliteEngine()


def engine_for(db: Executor) -> Engine:
    return POSTGRES if dialect_of(db) == "postgresql" else SQLITE
