"""The session index kept in line with the files, so that a listing never opens a session file.

The index is a cache of the files. Writers keep it current (`record`, `note_appended`), with the
session's searchable text (shared.index.search); `reconcile_user` brings one user's rows in
line with the files (re-reading only files whose size or mtime changed); a user without an
`index_state` row (a dropped index) is reconciled before their next listing.

Every write first bumps the owner's change number (`index_state.seq`: this also serialises a
user's index writers) and logs the row's previous sort key in `session_moves`, which is what
lets a listing cursor stay exact while sessions move (shared.index.listing).

Imports shared.core, shared.files and shared.db.
"""

from __future__ import annotations

import logging
import secrets
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import BigInteger, Table, bindparam, delete, func, insert, select, text, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from shared.core.clock import parse_time, utcnow
from shared.core.errors import EonyxError, NotFound, StorageError
from shared.core.text import for_index
from shared.db.database import (
    Database,
    Executor,
    UTCDateTime,
    connection_of,
    dialect_of,
    insert_for,
    upsert,
)
from shared.db.orm import IndexState, SessionMove, SessionRow
from shared.files.session_state import meta_mapping
from shared.files.session_store import META_FIELDS, FileInfo, SessionState, SessionStore
from shared.index import appends, search

log = logging.getLogger(__name__)
# Metadata that the index keeps in columns (the rest stays in the file).
INDEXED_META = ("title", "title_pending", "pinned", "archived", "folder_id", "deleted_at")
_NO_KEY = {"pinned": None, "updated_at": None}  # the move that created a row
LOCK_CLASS = 0x656F  # PostgreSQL advisory locks of the index, one per user
TEXT_BATCH = 5000


def _indexable(value: Any) -> str | None:
    """Text as the index can hold it on every backend (see `text.for_index`)."""
    return None if value is None else for_index(str(value))


# An import's header keeps where it came from (shared.sessions.bundles.ImportedFrom); a fork of
# a shared link says so by its source, SHARED_IMPORT (shared.sessions.shares).
IMPORTED_FROM = "imported_from"
SHARED_IMPORT = "shared"


def imported(state: SessionState) -> str | None:
    """How an imported session came, for the list to mark it: `shared` or `bundle`."""
    origin = meta_mapping(state, IMPORTED_FROM)
    if origin is None:
        return None
    return SHARED_IMPORT if origin.get("source") == SHARED_IMPORT else "bundle"


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
        "deleted_at": state.deleted_at,
        "forked_from": state.forked_from,
        "imported": imported(state),
        "file_size": info.size,
        "file_mtime_ns": info.mtime_ns,
    }


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
        seq=func.coalesce(bindparam("seq", type_=BigInteger()), _TABLE.c.seq),
    )
)
_STATE = cast(Table, IndexState.__table__)
_MOVES = cast(Table, SessionMove.__table__)
_BUMP = (
    update(_STATE)
    .where(_STATE.c.user_id == bindparam("uid"))
    .values(seq=_STATE.c.seq + 1)
    .returning(_STATE.c.seq)
)
_LOG_MOVE = insert(_MOVES).from_select(
    ["user_id", "session_id", "seq", "pinned", "updated_at", "at"],
    select(
        _TABLE.c.user_id,
        _TABLE.c.id,
        bindparam("seq", type_=BigInteger()),
        _TABLE.c.pinned,
        _TABLE.c.updated_at,
        bindparam("at", type_=UTCDateTime()),
    ).where(_TABLE.c.id == bindparam("sid"), _TABLE.c.file_size == bindparam("size_before")),
)


def _lock_params(user_id: str) -> dict[str, int]:
    """The user's advisory lock on PostgreSQL: an int4 key, under the index's own class."""
    return {"lock_class": LOCK_CLASS, "lock_key": int(user_id[:8], 16) - 2**31}


def lock_user(db: Executor, user_id: str) -> None:
    """Serialise the user's index writers until the transaction ends (a rebuild included,
    before their index_state row exists). On PostgreSQL an advisory transaction lock; SQLite
    has one writer at a time anyway."""
    if dialect_of(db) == "postgresql":
        db.execute(
            text("SELECT pg_advisory_xact_lock(:lock_class, :lock_key)"), _lock_params(user_id)
        )


def bump(db: Executor, user_id: str) -> int | None:
    """The user's next change number, holding their index lock until the transaction ends;
    None when their index is not built (the next listing rebuilds it anyway)."""
    lock_user(db, user_id)
    return db.execute(_BUMP, {"uid": user_id}).scalar()


def _log_moves(db: Executor, rows: list[dict[str, Any]]) -> None:
    """Rows of (user_id, session_id, seq, pinned, updated_at): keys before a write."""
    now = utcnow()
    for start in range(0, len(rows), 1000):
        db.execute(insert(_MOVES), [r | {"at": now} for r in rows[start : start + 1000]])


_FOLD_QUEUES: weakref.WeakKeyDictionary[Database, appends.FoldQueue] = weakref.WeakKeyDictionary()
_FOLD_QUEUES_LOCK = threading.Lock()


def _fold_queue(database: Database) -> appends.FoldQueue:
    """The database's fold queue, made on first use (in the process that writes)."""
    queue = _FOLD_QUEUES.get(database)
    if queue is None:
        with _FOLD_QUEUES_LOCK:
            queue = _FOLD_QUEUES.setdefault(database, appends.FoldQueue(database))
    return queue


class _NotFolded(Exception):
    """The row is not the one expected: what the transaction wrote is undone."""


def note_appended(
    database: Database,
    user_id: str,
    session_id: str,
    records: Sequence[Mapping[str, Any]],
    size_before: int,
    info: FileInfo,
) -> bool:
    """Fold appended records into a row in a transaction of its own, only if the row
    describes the file exactly as it was before them (`size_before`). False otherwise (no
    row, or someone else indexed the file meanwhile), and the row is left as it was: then the
    caller folds the file instead, so no record is ever counted twice or missed. A
    `supersede` record (a regenerate, an edit) is folded that way too, so the superseded
    messages' text leaves the search with them."""
    if any(record.get("type") == "supersede" for record in records):
        return False
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
    docs = search.docs_of(user_id, session_id, records)
    try:
        if not meta:  # a turn's messages: the driver's SQL, with other turns' (appends.py)
            return _fold_queue(database).fold(appends.Fold(params | _lock_params(user_id), docs))
        with database.transaction() as db:
            _fold_meta(db, params, meta, docs)
    except _NotFolded:
        return False
    return True


def _fold_meta(
    db: Executor, params: dict[str, Any], meta: dict[str, Any], docs: list[dict[str, Any]]
) -> None:
    """`note_appended` for records with metadata (titles, pins, folders), in SQLAlchemy Core."""
    user_id, session_id = params["uid"], params["sid"]
    params["seq"] = seq = bump(db, user_id)
    if seq is not None:  # the row's key before this write, if the row is the one we expect
        db.execute(_LOG_MOVE, params | {"at": utcnow()})
    result = connection_of(db).execute(_APPENDED, params)  # a CursorResult: its rowcount
    if result.rowcount != 1:
        raise _NotFolded
    columns = _columns(meta)
    if columns:
        db.execute(update(_TABLE).where(_TABLE.c.id == session_id).values(**columns))
    search.add(db, docs)
    if "title" in meta:
        search.set_title(db, user_id, session_id, meta["title"])


def _columns(meta: dict[str, Any]) -> dict[str, Any]:
    """Column values for indexed metadata as the file records it."""
    columns = {key: meta[key] for key in INDEXED_META if key in meta}
    for key in ("pinned", "archived", "title_pending"):
        if key in columns:
            columns[key] = bool(columns[key])
    if columns.get("deleted_at"):
        columns["deleted_at"] = parse_time(columns["deleted_at"])
    for key in ("title", "folder_id"):
        if key in columns:
            columns[key] = _indexable(columns[key])
    return columns


def record(db: Executor, state: SessionState, info: FileInfo, *, text: bool = False) -> None:
    """Write-through after a change to a session file. `text`: the state was folded with its
    messages, and the session's searchable text is rewritten from them (else only its title)."""
    seq = bump(db, state.user_id)
    if seq is not None:
        old = db.execute(
            select(SessionRow.pinned, SessionRow.updated_at).where(SessionRow.id == state.id)
        ).first()
        key = {"pinned": old[0], "updated_at": old[1]} if old else _NO_KEY
        _log_moves(db, [{"user_id": state.user_id, "session_id": state.id, "seq": seq} | key])
    upsert(db, _TABLE, [row_values(state, info) | {"seq": seq or 0}], ["id"])
    if text:
        search.replace_session(db, state.user_id, state.id, state.title, state.messages)
    else:
        search.set_title(db, state.user_id, state.id, state.title)


def forget(db: Executor, session_id: str) -> None:
    """Forget a session that is gone: its row and its text."""
    db.execute(delete(SessionRow).where(SessionRow.id == session_id))
    search.forget(db, [session_id])


def trashed_before(db: Session, cutoff: datetime) -> list[tuple[str, str]]:
    """(user id, session id) of sessions in the trash since before `cutoff`."""
    query = select(SessionRow.user_id, SessionRow.id).where(SessionRow.deleted_at < cutoff)
    return [(user_id, session_id) for user_id, session_id in db.execute(query)]


def prune_moves(db: Session, cutoff: datetime) -> int:
    """Forget moves older than any cursor still usable."""
    return db.connection().execute(delete(SessionMove).where(SessionMove.at < cutoff)).rowcount


def empty_before(db: Session, cutoff: datetime) -> list[tuple[str, str]]:
    """(user id, session id) of indexed sessions with no message, unchanged since `cutoff`."""
    query = select(SessionRow.user_id, SessionRow.id).where(
        SessionRow.message_count == 0,
        SessionRow.image_count == 0,
        SessionRow.updated_at < cutoff,
    )
    return [(user_id, session_id) for user_id, session_id in db.execute(query)]


def empty_of(db: Session, user_id: str) -> tuple[int, datetime | None]:
    """How many sessions of `user_id` have no message (the trash's included), and when the
    least recently changed of them last changed."""
    query = select(func.count(), func.min(SessionRow.updated_at)).where(
        SessionRow.user_id == user_id,
        SessionRow.message_count == 0,
        SessionRow.image_count == 0,
    )
    count, oldest = db.execute(query).one()
    return count, oldest


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
                upsert(db, _TABLE, batch, ["id"])
            continue
        except (SQLAlchemyError, ValueError):
            pass
        for row in batch:
            try:
                with db.begin_nested():
                    upsert(db, _TABLE, [row], ["id"])
            except (SQLAlchemyError, ValueError) as exc:
                log.warning("not indexing session %s/%s: %s", row["user_id"], row["id"], exc)
                report.failed.append(f"{row['user_id']}/{row['id']}: {_short(exc)}")


def _ensure_state(db: Session, user_id: str) -> None:
    """An index_state row for the user (a new generation when there was none)."""
    row = {"user_id": user_id, "built_at": utcnow(), "seq": 0, "generation": secrets.token_hex(8)}
    statement = insert_for(dialect_of(db))(cast(Table, IndexState.__table__))
    db.execute(statement.values(**row).on_conflict_do_nothing())


def reconcile_user(db: Session, store: SessionStore, user_id: str) -> ReconcileReport:
    """Make the user's rows (and text) match their files; re-read only new or changed files.
    A file that cannot be read or indexed is reported in `failed` and left out; the rest go on."""
    lock_user(db, user_id)
    _ensure_state(db, user_id)
    seq = bump(db, user_id) or 0
    known = {
        row.id: row
        for row in db.execute(
            select(
                SessionRow.id,
                SessionRow.file_size,
                SessionRow.file_mtime_ns,
                SessionRow.pinned,
                SessionRow.updated_at,
            ).where(SessionRow.user_id == user_id)
        )
    }
    report = ReconcileReport()
    fresh: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []  # searchable text of re-read files, added in batches
    for session_id, info in store.scan(user_id):
        report.scanned += 1
        old = known.pop(session_id, None)
        if old is not None and FileInfo(old.file_size, old.file_mtime_ns) == info:
            continue
        try:
            state, info = store.load(user_id, session_id)
        except NotFound:  # gone meanwhile
            continue
        except StorageError as exc:  # damaged: leave it out, and say so
            log.warning("skipping unreadable session file %s/%s", user_id, session_id)
            report.failed.append(f"{user_id}/{session_id}: {exc.message}")
            continue
        fresh.append(row_values(state, info) | {"seq": seq})
        key = {"pinned": old.pinned, "updated_at": old.updated_at} if old else _NO_KEY
        moves.append({"user_id": user_id, "session_id": session_id, "seq": seq} | key)
        if old is not None:
            search.forget(db, [session_id])
        docs.extend(search.docs_of(user_id, session_id, state.messages))
        if state.title and state.title.strip():
            docs.append(search.title_doc(user_id, session_id, state.title))
        if len(docs) >= TEXT_BATCH:
            search.add(db, docs)
            docs.clear()
    search.add(db, docs)
    gone = list(known)  # rows whose file is gone
    report.reread, report.removed = len(fresh), len(gone)
    for start in range(0, len(gone), 500):
        db.execute(delete(SessionRow).where(SessionRow.id.in_(gone[start : start + 500])))
    search.forget(db, gone)
    _log_moves(db, moves)
    _write_rows(db, fresh, report)
    db.execute(update(IndexState).where(IndexState.user_id == user_id).values(built_at=utcnow()))
    return report


def rebuild(
    database: Database,
    store: SessionStore,
    progress: Callable[[int], None] | None = None,
) -> ReconcileReport:
    """Reconcile every user found on disk, one transaction per user, `database.writers` users
    at a time (on PostgreSQL the server indexes one user's texts while this process reads
    the next one's files). A user whose reconcile fails is reported in `failed` and the
    rebuild goes on with the others."""

    def one(user_id: str) -> ReconcileReport:
        try:
            with database.session() as db:
                return reconcile_user(db, store, user_id)
        except (SQLAlchemyError, OSError, EonyxError, ValueError) as exc:
            log.warning("index of user %s not rebuilt: %s", user_id, exc)
            return ReconcileReport(failed=[f"{user_id}: {_short(exc)}"])

    total = ReconcileReport()
    with ThreadPoolExecutor(database.writers, thread_name_prefix="rebuild") as pool:
        for report in pool.map(one, store.user_ids()):
            total.add(report)
            if progress:
                progress(report.scanned)
    return total


def forget_user(db: Session, user_id: str) -> None:
    """Forget a user's whole index: rows, moves, text and state (their account is being
    deleted; their files go with it, so nothing can rebuild it)."""
    db.execute(delete(SessionRow).where(SessionRow.user_id == user_id))
    db.execute(delete(SessionMove).where(SessionMove.user_id == user_id))
    db.execute(delete(IndexState).where(IndexState.user_id == user_id))
    search.forget_user(db, user_id)


def drop(db: Session) -> None:
    """Forget the whole index; the next listing of each user rebuilds theirs (a new
    generation: cursors given out before say they expired)."""
    db.execute(delete(SessionRow))
    db.execute(delete(IndexState))
    db.execute(delete(SessionMove))
    search.drop(db)
