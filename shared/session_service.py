"""Session operations as the API, the CLI and the workers see them.

Each function takes the runtime and the calling principal, checks ownership (another user's
session is simply not found), writes the file first and then keeps the index in step.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from shared import index
from shared.accounts import Principal
from shared.errors import InvalidInput
from shared.models import SessionRow
from shared.runtime import Runtime
from shared.sessions import FileInfo, check_session_id, isoformat, utcnow

TITLE_MAX = 200


def _clean_title(title: str | None) -> str | None:
    if title is None:
        return None
    title = " ".join(title.split())
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"title is longer than {TITLE_MAX} characters")
    return title or None


def create_session(
    rt: Runtime,
    principal: Principal,
    *,
    title: str | None = None,
    folder_id: str | None = None,
    temporary: bool = False,
) -> SessionRow:
    snapshot = None if temporary else rt.memory.snapshot(principal.user_id)
    state, info = rt.store.create(
        principal.user_id,
        source=principal.source,
        title=_clean_title(title),
        folder_id=folder_id,
        temporary=temporary,
        extra={"snapshot": snapshot},
    )
    with rt.db.session() as db:
        index.record(db, state, info)
        return index.get_row(db, principal.user_id, state.id)


def _ensure_index(db: Session, rt: Runtime, user_id: str) -> None:
    if not index.is_built(db, user_id):
        index.reconcile_user(db, rt.store, user_id)


def _row(db: Session, rt: Runtime, user_id: str, session_id: str) -> SessionRow:
    """The caller's session row; a file the index has not seen yet is indexed on the way."""
    check_session_id(session_id)
    _ensure_index(db, rt, user_id)
    row = db.get(SessionRow, session_id)
    if row is not None and row.user_id == user_id:
        return row
    # Not indexed (written behind the index's back), or not the caller's: the file decides,
    # and another user's session is not under the caller's directory.
    state, info = rt.store.load(user_id, session_id, keep_messages=False)
    index.record(db, state, info)
    return index.get_row(db, user_id, session_id)


def list_sessions(
    rt: Runtime,
    principal: Principal,
    *,
    limit: int = 50,
    cursor: str | None = None,
    query: str | None = None,
    folder_id: str | None = None,
    archived: bool = False,
) -> tuple[list[SessionRow], str | None]:
    with rt.db.session() as db:
        _ensure_index(db, rt, principal.user_id)
        return index.list_page(
            db,
            principal.user_id,
            limit=limit,
            cursor=cursor,
            query=query,
            folder_id=folder_id,
            archived=archived,
        )


def get_session(rt: Runtime, principal: Principal, session_id: str) -> SessionRow:
    with rt.db.session() as db:
        return _row(db, rt, principal.user_id, session_id)


def append_records(
    rt: Runtime, principal: Principal, session_id: str, records: list[dict[str, Any]]
) -> SessionRow:
    """Durably append records to a session, then bring its index row up to date from them
    (one transaction; the file is written first, so a failed write changes no row)."""
    with rt.db.session() as db:
        row = _row(db, rt, principal.user_id, session_id)
        info = rt.store.append(principal.user_id, session_id, records)
        index.note_appended(db, principal.user_id, session_id, records, info)
        db.refresh(row)
        return row


def index_appended(
    rt: Runtime, user_id: str, session_id: str, records: list[dict[str, Any]], info: FileInfo
) -> None:
    """Bring the index row up to date with records already on disk (one transaction)."""
    with rt.db.session() as db:
        if not index.note_appended(db, user_id, session_id, records, info):
            state, info = rt.store.load(user_id, session_id, keep_messages=False)
            index.record(db, state, info)


def update_session(
    rt: Runtime, principal: Principal, session_id: str, changes: dict[str, Any]
) -> SessionRow:
    """Apply PATCH fields (title, pinned, archived, folder_id) as one meta record."""
    if "title" in changes:
        changes["title"] = _clean_title(changes["title"])
        changes["title_pending"] = False
    if not changes:
        return get_session(rt, principal, session_id)
    meta = {"type": "meta", "at": isoformat(utcnow()), "set": changes}
    return append_records(rt, principal, session_id, [meta])


def delete_session(rt: Runtime, principal: Principal, session_id: str) -> None:
    get_session(rt, principal, session_id)
    rt.store.delete(principal.user_id, session_id)
    with rt.db.session() as db:
        index.forget(db, session_id)


def get_messages(rt: Runtime, principal: Principal, session_id: str) -> list[dict[str, Any]]:
    get_session(rt, principal, session_id)
    state, _ = rt.store.load(principal.user_id, session_id)
    return state.messages


def sweep_empty_sessions(rt: Runtime) -> int:
    """Remove sessions that never got a message and are older than the grace period.

    Candidates come from the index (cheap); each one is confirmed against its file under the
    session lock, so a session that just received its first message is never removed.
    """
    cutoff = utcnow() - timedelta(seconds=rt.settings.empty_session_grace_seconds)
    with rt.db.session() as db:
        candidates = index.empty_before(db, cutoff)
    removed = 0
    for user_id, session_id in candidates:
        if rt.store.delete_if_empty(user_id, session_id, cutoff):
            removed += 1
            with rt.db.session() as db:
                index.forget(db, session_id)
    return removed
