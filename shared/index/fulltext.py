"""The full-text engines behind shared.index.search: one interface (`Engine`), one per
backend, each in its own module:

- SQLite: an FTS5 table kept in batches, beside each user's vocabulary (shared.index.fts5);
- PostgreSQL: a generated tsvector column with a GIN index, each lexeme keyed by its owner
  (shared.index.tsvector).

Both find a user's matching rows newest first (by id), a window at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from sqlalchemy import ColumnElement

from shared.db.database import Executor
from shared.index import rows

Row = tuple[int, str, str, str, str]  # id, session_id, message_id, role, body


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

    def insert(self, db: Executor, docs: Sequence[Mapping[str, Any]]) -> None:
        """Insert these texts (user_id, session_id, message_id, role, body; a text already
        there is left as it is) and index them, now or with a batch."""
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


def fetch_rows(db: Executor, sql: str, params: Mapping[str, Any]) -> list[Row]:
    """Rows straight from the driver: thousands of them per search, so no ORM on the way."""
    return cast(list[Row], rows.fetch(db, sql, params))
