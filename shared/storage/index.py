"""The session index: listing data in SQL so that a listing never opens a session file.

It is a cache of the files. Writers keep it current (`record`); `reconcile_user` brings one
user's rows in line with the files (re-reading only files whose size or mtime changed);
a user without an `index_state` row (a dropped index) is reconciled before their next listing.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, delete, false, func, or_, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.errors import EonyxError, InvalidInput, NotFound, StorageError
from shared.core.text import for_index
from shared.storage.db import UTCDateTime
from shared.storage.orm import IndexState, SessionRow
from shared.storage.session_store import (
    META_FIELDS,
    SESSION_ID_RE,
    FileInfo,
    SessionState,
    SessionStore,
)

log = logging.getLogger(__name__)
MAX_PAGE = 200


def _indexable(value: Any) -> str | None:
    """Text as the index can hold it on every backend (see `text.for_index`)."""
    return None if value is None else for_index(str(value))


def row_values(state: SessionState, info: FileInfo) -> dict[str, Any]:
    return {
        "id": state.id,
        "user_id": state.user_id,
        "title": _indexable(state.title),
        "title_pending": bool(state.title_pending),
        "source": state.source,
        "temporary": bool(state.temporary),
        "pinned": bool(state.pinned),
        "archived": bool(state.archived),
        "folder_id": _indexable(state.folder_id),
        "message_count": state.message_count,
        "image_count": state.image_count,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "file_size": info.size,
        "file_mtime_ns": info.mtime_ns,
    }


def _upsert(db: Session, model: type[Any], rows: list[dict[str, Any]], key: str) -> None:
    """INSERT ... ON CONFLICT DO UPDATE, so concurrent writers of one row never collide."""
    if not rows:
        return
    dialect = db.get_bind().dialect.name
    make_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = make_insert(model)
    columns = {name: statement.excluded[name] for name in rows[0] if name != key}
    db.execute(statement.on_conflict_do_update(index_elements=[key], set_=columns), rows)


_TABLE = cast(Table, SessionRow.__table__)
# Built once: the hot path of every turn (SQLAlchemy then reuses its compiled form).
_APPENDED = (
    update(_TABLE)
    .where(
        _TABLE.c.id == bindparam("sid"),
        _TABLE.c.user_id == bindparam("uid"),
        _TABLE.c.file_size == bindparam("size_before"),
    )
    .values(
        message_count=_TABLE.c.message_count + bindparam("messages"),
        image_count=_TABLE.c.image_count + bindparam("images"),
        updated_at=func.coalesce(bindparam("updated", type_=UTCDateTime()), _TABLE.c.updated_at),
        file_size=bindparam("size"),
        file_mtime_ns=bindparam("mtime"),
    )
)


def note_appended(
    connection: Connection,
    user_id: str,
    session_id: str,
    records: list[dict[str, Any]],
    size_before: int,
    info: FileInfo,
) -> bool:
    """Fold appended records into a row with one UPDATE, only if the row describes the file
    exactly as it was before them (`size_before`). False otherwise (no row, or someone else
    indexed the file meanwhile): then the caller folds the file instead, so no record is ever
    counted twice or missed."""
    never = datetime.min.replace(tzinfo=UTC)
    delta = SessionState(session_id, user_id, "", never, never)
    meta: dict[str, Any] = {}
    for record in records:
        delta.apply(record, keep_messages=False)
        if record.get("type") == "meta":
            meta.update({k: v for k, v in (record.get("set") or {}).items() if k in META_FIELDS})
    params = {
        "sid": session_id,
        "uid": user_id,
        "messages": delta.message_count,
        "images": delta.image_count,
        "updated": delta.updated_at if delta.updated_at != never else None,
        "size_before": size_before,
        "size": info.size,
        "mtime": info.mtime_ns,
    }
    for key in ("pinned", "archived", "title_pending"):
        if key in meta:
            meta[key] = bool(meta[key])
    for key in ("title", "folder_id"):
        if key in meta:
            meta[key] = _indexable(meta[key])
    statement = _APPENDED.values(**meta) if meta else _APPENDED  # one UPDATE either way
    return bool(connection.execute(statement, params).rowcount == 1)


def record(db: Session, state: SessionState, info: FileInfo) -> None:
    """Write-through after a change to a session file."""
    _upsert(db, SessionRow, [row_values(state, info)], "id")


def forget(db: Session, session_id: str) -> None:
    db.execute(delete(SessionRow).where(SessionRow.id == session_id))


def empty_before(db: Session, cutoff: datetime) -> list[tuple[str, str]]:
    """(user id, session id) of indexed sessions with no message, unchanged since `cutoff`."""
    query = select(SessionRow.user_id, SessionRow.id).where(
        SessionRow.message_count == 0,
        SessionRow.image_count == 0,
        SessionRow.updated_at < cutoff,
    )
    return [(user_id, session_id) for user_id, session_id in db.execute(query)]


def get_row(db: Session, user_id: str, session_id: str) -> SessionRow:
    row = db.get(SessionRow, session_id)
    if row is None or row.user_id != user_id:
        raise NotFound("session not found")
    return row


def is_built(db: Session, user_id: str) -> bool:
    return db.get(IndexState, user_id) is not None


@dataclass
class ReconcileReport:
    scanned: int = 0
    reread: int = 0
    removed: int = 0
    failed: list[str] = field(default_factory=list)  # "<user>[/<session>]: why", left out

    def add(self, other: ReconcileReport) -> None:
        self.scanned += other.scanned
        self.reread += other.reread
        self.removed += other.removed
        self.failed.extend(other.failed)


def _short(exc: BaseException) -> str:
    """The first line of an error, without SQLAlchemy's statement and parameters."""
    inner = getattr(exc, "orig", None) or exc
    return (str(inner).strip().splitlines() or [type(inner).__name__])[0][:200]


def _write_rows(db: Session, rows: list[dict[str, Any]], report: ReconcileReport) -> None:
    """Upsert rows in batches; a batch that fails is redone row by row, each in a savepoint,
    so one row the database refuses is reported and left out, and the rest are written."""
    for start in range(0, len(rows), 1000):
        batch = rows[start : start + 1000]
        try:
            with db.begin_nested():
                _upsert(db, SessionRow, batch, "id")
            continue
        except (SQLAlchemyError, ValueError):
            pass
        for row in batch:
            try:
                with db.begin_nested():
                    _upsert(db, SessionRow, [row], "id")
            except (SQLAlchemyError, ValueError) as exc:
                log.warning("not indexing session %s/%s: %s", row["user_id"], row["id"], exc)
                report.failed.append(f"{row['user_id']}/{row['id']}: {_short(exc)}")


def reconcile_user(db: Session, store: SessionStore, user_id: str) -> ReconcileReport:
    """Make the user's rows match their files; re-read only new or changed files. A file
    that cannot be read or indexed is reported in `failed` and left out; the rest go on."""
    known = {
        row.id: FileInfo(row.file_size, row.file_mtime_ns)
        for row in db.execute(
            select(SessionRow.id, SessionRow.file_size, SessionRow.file_mtime_ns).where(
                SessionRow.user_id == user_id
            )
        )
    }
    report = ReconcileReport()
    fresh: list[dict[str, Any]] = []
    for session_id, info in store.scan(user_id):
        report.scanned += 1
        if known.pop(session_id, None) == info:
            continue
        try:
            state, info = store.load(user_id, session_id, keep_messages=False)
        except NotFound:  # gone meanwhile
            continue
        except StorageError as exc:  # damaged: leave it out, and say so
            log.warning("skipping unreadable session file %s/%s", user_id, session_id)
            report.failed.append(f"{user_id}/{session_id}: {exc.message}")
            continue
        fresh.append(row_values(state, info))
    gone = list(known)  # rows whose file is gone
    report.reread, report.removed = len(fresh), len(gone)
    for start in range(0, len(gone), 500):
        db.execute(delete(SessionRow).where(SessionRow.id.in_(gone[start : start + 500])))
    _write_rows(db, fresh, report)
    _upsert(db, IndexState, [{"user_id": user_id, "built_at": utcnow()}], "user_id")
    return report


def rebuild(
    session_factory: Callable[[], Any],
    store: SessionStore,
    progress: Callable[[int], None] | None = None,
) -> ReconcileReport:
    """Reconcile every user found on disk, one transaction per user. A user whose
    reconcile fails is reported in `failed` and the rebuild goes on with the next one."""
    total = ReconcileReport()
    for user_id in store.user_ids():
        try:
            with session_factory() as db:
                report = reconcile_user(db, store, user_id)
        except (SQLAlchemyError, OSError, EonyxError, ValueError) as exc:
            log.warning("index of user %s not rebuilt: %s", user_id, exc)
            report = ReconcileReport(failed=[f"{user_id}: {_short(exc)}"])
        total.add(report)
        if progress:
            progress(report.scanned)
    return total


def drop(db: Session) -> None:
    """Forget the whole index; the next listing of each user rebuilds theirs."""
    db.execute(delete(SessionRow))
    db.execute(delete(IndexState))


def encode_cursor(row: SessionRow) -> str:
    raw = json.dumps([int(row.pinned), isoformat(row.updated_at), row.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[bool, datetime, str]:
    """The position a cursor of `encode_cursor` names; anything else (a forged or damaged
    cursor, whatever its types) is InvalidInput."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        pinned, updated, session_id = json.loads(raw)
        if pinned not in (0, 1) or not isinstance(updated, str) or not isinstance(session_id, str):
            raise ValueError("wrong types")
        moment = parse_time(updated)
        if moment.tzinfo is None or not SESSION_ID_RE.fullmatch(session_id):
            raise ValueError("not a time with a zone, or not a session id")
        return bool(pinned), moment, session_id
    except (ValueError, TypeError, binascii.Error):
        raise InvalidInput(
            "cursor is not one this server gave out", code="invalid_cursor"
        ) from None


def list_page(
    db: Session,
    user_id: str,
    *,
    limit: int = 50,
    cursor: str | None = None,
    query: str | None = None,
    folder_id: str | None = None,
    archived: bool = False,
) -> tuple[list[SessionRow], str | None]:
    """Pinned first, then most recently updated; a keyset cursor keeps pages stable under writes."""
    limit = max(1, min(limit, MAX_PAGE))
    stmt = select(SessionRow).where(
        SessionRow.user_id == user_id,
        SessionRow.temporary == false(),
        SessionRow.archived == (true() if archived else false()),
    )
    if folder_id is not None:
        stmt = stmt.where(SessionRow.folder_id == folder_id)
    if query:
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(SessionRow.title.ilike(pattern, escape="\\"))
    if cursor:
        pinned, updated, last_id = decode_cursor(cursor)
        same_pin = SessionRow.pinned == (true() if pinned else false())
        after = [
            and_(same_pin, SessionRow.updated_at < updated),
            and_(same_pin, SessionRow.updated_at == updated, SessionRow.id < last_id),
        ]
        if pinned:
            after.append(SessionRow.pinned == false())
        stmt = stmt.where(or_(*after))
    stmt = stmt.order_by(
        SessionRow.pinned.desc(), SessionRow.updated_at.desc(), SessionRow.id.desc()
    ).limit(limit + 1)
    rows = list(db.scalars(stmt))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1]) if more and rows else None
