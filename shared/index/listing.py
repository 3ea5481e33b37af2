"""Listing sessions as a sidebar needs them: filtered, pinned first, then most recently
updated, in pages; and search results, ranked, in pages.

What a listing cursor guarantees. The first page records the owner's change number `S`
(index_state.seq, read in the same statement as the page). Every later page walks the list
*as it was at S*: each session that was listed at S appears exactly once across the pages,
at its place at S, however sessions are added, updated, pinned or unpinned between pages. A
row unchanged since S is found through the listing index; a row changed since has its key at
S in `session_moves` (the key before its first write after S). Sessions created after S are
not part of the walk (they are at the top of the next first page); a session that left the
filter since S (archived, trashed, purged) is left out; the items themselves carry their
current values. A cursor lives CURSOR_LIFE; an older one, or one from before the index was
dropped, answers `cursor_expired` (list again from the first page).

Search pages are the ranked matches (shared.index.search), filtered like the list, cut at
an offset. Tiers make earlier pages stable while one pages on; a session whose text changes
between pages may move.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import namedtuple
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import InvalidInput
from shared.db.database import Executor
from shared.db.orm import SessionMove
from shared.files.session_store import SESSION_ID_RE
from shared.index import rows as index_rows
from shared.index import search
from shared.index.rows import Listed

MAX_PAGE = 200
MAX_COUNT = 2**63 - 1  # a BIGINT
# The times a listing key can hold: no session of Eonyx was updated before 1970 or after 9998.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)
CURSOR_LIFE = timedelta(hours=24)
MOVES_KEPT = CURSOR_LIFE + timedelta(hours=1)
SOURCES = ("web", "api", "teams", "cli", "mcp")  # the client a session was made by
CONSOLE_SOURCE = "cli"  # eonyx run and eonyx chat
CLIENT_SOURCES = ("web", CONSOLE_SOURCE)  # what a client may say it is when it makes one
UNFILED = "none"  # folder_id=none: the sessions in no folder

Key = tuple[bool, datetime, str]  # (pinned, updated_at, id), listed in descending order


class IndexNotBuilt(Exception):
    """The user's index is not built (dropped, or never): reconcile, then list again."""


@dataclass(frozen=True)
class Filters:
    folder_id: str | None = None
    archived: bool = False
    trash: bool = False
    source: str | None = None

    def where(self, user_id: str) -> tuple[str, dict[str, Any]]:
        """The condition in SQL (shared.index.rows) and its parameters. The trash holds
        deleted sessions whether archived or not; otherwise `archived` picks the archived
        ones or the others. Temporary chats are never listed."""
        clauses = ["user_id = :user_id", "temporary = :no"]
        params: dict[str, Any] = {"user_id": user_id, "no": False}
        if self.trash:
            clauses.append("deleted_at IS NOT NULL")
        else:
            clauses.append("deleted_at IS NULL")
            clauses.append("archived = :archived")
            params["archived"] = self.archived
        if self.folder_id == UNFILED:
            clauses.append("folder_id IS NULL")
        elif self.folder_id is not None:
            clauses.append("folder_id = :folder_id")
            params["folder_id"] = self.folder_id
        if self.source is not None:
            clauses.append("source = :source")
            params["source"] = self.source
        return " AND ".join(clauses), params

    def admits(self, row: Any, user_id: str) -> bool:
        """`where` in Python, for rows fetched by id (a planner given `user_id = ? AND id IN
        (...)` may walk all the user's rows instead of looking the ids up). `row` may hold
        the driver's values (SQLite's 0 and 1 for booleans)."""
        if row.user_id != user_id or row.temporary:
            return False
        if self.trash != (row.deleted_at is not None):
            return False
        if not self.trash and bool(row.archived) != self.archived:
            return False
        if self.folder_id == UNFILED and row.folder_id is not None:
            return False
        if self.folder_id not in (None, UNFILED) and row.folder_id != self.folder_id:
            return False
        return self.source is None or row.source == self.source

    def fingerprint(self, query: str | None = None) -> str:
        raw = json.dumps([self.folder_id, self.archived, self.trash, self.source, query])
        return hashlib.sha256(raw.encode()).hexdigest()[:12]


def key_of(row: Listed) -> Key:
    return (bool(row.pinned), row.updated_at, row.id)


ORDER = "ORDER BY pinned DESC, updated_at DESC, id DESC"
_STATE = (
    "(SELECT seq FROM index_state WHERE user_id = :user_id), "
    "(SELECT generation FROM index_state WHERE user_id = :user_id)"
)


def _after(db: Executor, key: Key) -> tuple[str, dict[str, Any]]:
    """Rows listed after `key` (pinned first, then newest first, then id descending)."""
    pinned, updated, last_id = key
    after = [
        "pinned = :after_pinned AND updated_at < :after_time",
        "pinned = :after_pinned AND updated_at = :after_time AND id < :after_id",
    ]
    if pinned:
        after.append("pinned = :no")
    params = {
        "after_pinned": pinned,
        "after_time": index_rows.bind_time(db, updated),
        "after_id": last_id,
    }
    return " OR ".join(f"({clause})" for clause in after), params


# -- cursors --------------------------------------------------------------------------------


def _encode(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _invalid_cursor() -> InvalidInput:
    return InvalidInput("cursor is not one this server gave out", code="invalid_cursor")


def _decode(cursor: str, fingerprint: str) -> dict[str, Any]:
    """The cursor's fields, read by the domain's JSON reader (no NaN, no huge number, no deep
    nesting). Its values are checked by whoever reads them (`_count`, `_key`)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = decode_json(raw, what="the cursor")
    except (InvalidJSON, ValueError, TypeError, binascii.Error):
        raise _invalid_cursor() from None
    if not isinstance(data, dict) or data.get("v") != 2:
        raise _invalid_cursor()
    if data.get("f") != fingerprint:
        raise InvalidInput("cursor belongs to a listing with other filters", code="invalid_cursor")
    return data


def _count(value: Any) -> int:
    """A change number, time or offset from a cursor: a JSON integer that a BIGINT holds,
    not negative (a float, a string or `true` is no cursor of ours)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise _invalid_cursor()
    return value


def _key(value: Any) -> Key:
    """A listing key from a cursor: [0 or 1, an aware time the index can hold, a session id]."""
    if not isinstance(value, list) or len(value) != 3:
        raise _invalid_cursor()
    pinned, updated, last_id = value
    if pinned not in (0, 1) or isinstance(pinned, float):
        raise _invalid_cursor()
    if not isinstance(updated, str) or not isinstance(last_id, str):
        raise _invalid_cursor()
    if not SESSION_ID_RE.fullmatch(last_id):
        raise _invalid_cursor()
    try:
        moment = parse_time(updated)
        if moment.tzinfo is None or not EARLIEST <= moment.astimezone(UTC) <= LATEST:
            raise ValueError(updated)
    except (ValueError, OverflowError):
        raise _invalid_cursor() from None
    return (bool(pinned), moment, last_id)


def _listing_cursor(generation: str, seq: int, key: Key, fingerprint: str) -> str:
    pinned, updated, last_id = key
    return _encode(
        {
            "v": 2,
            "f": fingerprint,
            "g": generation,
            "s": seq,
            "t": int(utcnow().timestamp()),
            "k": [int(pinned), isoformat(updated), last_id],
        }
    )


def _expired() -> InvalidInput:
    return InvalidInput(
        "the cursor has expired; list again from the first page", code="cursor_expired"
    )


# -- the list -------------------------------------------------------------------------------


def list_page(
    db: Executor, user_id: str, filters: Filters, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[Listed], str | None]:
    """One page of the list and the cursor of the next (None after the last page)."""
    limit = max(1, min(limit, MAX_PAGE))
    fingerprint = filters.fingerprint()
    if cursor is None:
        return _first_page(db, user_id, filters, limit, fingerprint)
    data = _decode(cursor, fingerprint)
    seq, issued, after = _count(data.get("s")), _count(data.get("t")), _key(data.get("k"))
    generation = data.get("g")
    if not isinstance(generation, str):
        raise _invalid_cursor()
    if _generation(db, user_id) != generation:  # None: the index was dropped
        raise _expired()
    if utcnow().timestamp() - issued > CURSOR_LIFE.total_seconds():
        raise _expired()
    return _later_page(db, user_id, filters, limit, fingerprint, seq, generation, after)


def _first_page(
    db: Executor, user_id: str, filters: Filters, limit: int, fingerprint: str
) -> tuple[list[Listed], str | None]:
    # The change number and generation come in the same statement as the rows: one snapshot.
    # The plan walks ix_session_index_listing (user_id, pinned, updated_at, id) backwards.
    where, params = filters.where(user_id)
    sql = f"SELECT {index_rows.COLUMN_LIST}, {_STATE} FROM session_index WHERE {where} {ORDER}"
    found = index_rows.listed(db, f"{sql} LIMIT :limit", params | {"limit": limit + 1}, extra=2)
    if (found and found[0][1][1] is None) or (not found and _generation(db, user_id) is None):
        raise IndexNotBuilt(user_id)  # no extra query when there are rows: the state came
    rows = [row for row, _ in found]
    if len(rows) <= limit:
        return rows, None
    seq, generation = found[0][1]
    rows = rows[:limit]
    return rows, _listing_cursor(generation or "", seq or 0, key_of(rows[-1]), fingerprint)


def _generation(db: Executor, user_id: str) -> str | None:
    """The user's index generation; None when their index is not built."""
    found = index_rows.fetch(
        db, "SELECT generation FROM index_state WHERE user_id = :user_id", {"user_id": user_id}
    )
    return str(found[0][0]) if found else None


def _later_page(
    db: Executor,
    user_id: str,
    filters: Filters,
    limit: int,
    fingerprint: str,
    seq: int,
    generation: str,
    after: Key,
) -> tuple[list[Listed], str | None]:
    # Unchanged since the first page: their key now is their key then.
    where, params = filters.where(user_id)
    later, after_params = _after(db, after)
    sql = (
        f"SELECT {index_rows.COLUMN_LIST} FROM session_index "
        f"WHERE {where} AND seq <= :seq AND ({later}) {ORDER} LIMIT :limit"
    )
    values = params | after_params | {"seq": seq, "limit": limit + 1}
    unchanged = [row for row, _ in index_rows.listed(db, sql, values)]
    placed: dict[str, tuple[Key, Listed]] = {row.id: (key_of(row), row) for row in unchanged}
    # Changed since: placed by their key at the first page (before their first later write).
    then: dict[str, Key | None] = {}
    moves = db.execute(
        select(SessionMove.session_id, SessionMove.pinned, SessionMove.updated_at)
        .where(SessionMove.user_id == user_id, SessionMove.seq > seq)
        .order_by(SessionMove.seq, SessionMove.id)
    )
    for session_id, pinned, updated in moves:
        if session_id not in then:  # created after the first page: not part of this walk
            then[session_id] = None if updated is None else (bool(pinned), updated, session_id)
    moved = sorted(
        ((key, sid) for sid, key in then.items() if key is not None and key < after), reverse=True
    )
    admitted = 0
    for start in range(0, len(moved), limit + 1):  # rows for the first limit + 1 that pass
        chunk = dict((sid, key) for key, sid in moved[start : start + limit + 1])
        for row in index_rows.by_id(db, list(chunk)):
            if filters.admits(row, user_id):
                placed[row.id] = (chunk[row.id], row)
                admitted += 1
        if admitted > limit:
            break
    ordered = sorted(placed.values(), key=lambda pair: pair[0], reverse=True)[: limit + 1]
    rows = [row for _, row in ordered[:limit]]
    if len(ordered) <= limit:
        return rows, None
    return rows, _listing_cursor(generation, seq, ordered[limit - 1][0], fingerprint)


# -- search ---------------------------------------------------------------------------------


@dataclass
class Found:
    row: Listed
    hit: search.Hit


def search_page(
    db: Executor,
    user_id: str,
    query: str,
    filters: Filters,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> tuple[list[Found], str | None]:
    """One page of the sessions matching `query`, best first, each with its snippet."""
    limit = max(1, min(limit, MAX_PAGE))
    fingerprint = filters.fingerprint(query)
    offset = 0
    if cursor is not None:
        offset = _count(_decode(cursor, fingerprint).get("o"))
    terms = search.parse_query(query)
    admitted: dict[str, Sequence[Any]] = {}  # the rows the filters let through, as read

    def keep(ids: list[str]) -> Collection[str]:
        tier = _in_filter(db, user_id, filters, ids)
        admitted.update(tier)
        return tier

    hits, more = search.search(db, user_id, terms, wanted=offset + limit + 1, keep=keep)
    shown = hits[offset : offset + limit]
    read = index_rows.reader(db)  # only the page's rows are made records
    page = [Found(read(admitted[hit.session_id]), hit) for hit in shown]
    search.add_snippets([found.hit for found in page], terms)
    more = more or len(hits) > offset + limit
    next_cursor = _encode({"v": 2, "f": fingerprint, "o": offset + limit}) if more else None
    return page, next_cursor


# A row of session_index as the driver gives it, for `Filters.admits`.
_Raw = namedtuple("_Raw", index_rows.COLUMNS)  # type: ignore[misc]
_BY_ID = f"SELECT {index_rows.COLUMN_LIST} FROM session_index WHERE id IN "
_ID = index_rows.COLUMNS.index("id")


def _in_filter(
    db: Executor, user_id: str, filters: Filters, ids: Sequence[str]
) -> dict[str, Sequence[Any]]:
    """The rows of these sessions that the filters admit, by id, as the driver gives them."""
    allowed: dict[str, Sequence[Any]] = {}
    for start in range(0, len(ids), 500):
        marks, params = index_rows.id_list(ids[start : start + 500])
        for found in index_rows.fetch(db, _BY_ID + marks, params):
            if filters.admits(_Raw._make(found), user_id):
                allowed[found[_ID]] = found
    return allowed
