"""Session operations as the API, the CLI and the workers see them.

Each function takes the runtime and the calling principal, checks ownership (another user's
session is simply not found), writes the file first and then keeps the index in step.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from shared import index
from shared.accounts import Principal
from shared.errors import InvalidInput, NotFound
from shared.models import SessionRow
from shared.runtime import Runtime
from shared.sessions import SessionState, isoformat, utcnow

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
    state, info = rt.store.create(
        principal.user_id,
        source=principal.source,
        title=_clean_title(title),
        folder_id=folder_id,
        temporary=temporary,
    )
    with rt.db.session() as db:
        index.record(db, state, info)
        return index.get_row(db, principal.user_id, state.id)


def _ensure_index(rt: Runtime, user_id: str) -> None:
    with rt.db.session() as db:
        if not index.is_built(db, user_id):
            index.reconcile_user(db, rt.store, user_id)


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
    _ensure_index(rt, principal.user_id)
    with rt.db.session() as db:
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
    _ensure_index(rt, principal.user_id)
    with rt.db.session() as db:
        try:
            return index.get_row(db, principal.user_id, session_id)
        except NotFound:
            pass
    # Not indexed yet (written behind the index's back): the file decides.
    state, info = rt.store.load(principal.user_id, session_id, keep_messages=False)
    with rt.db.session() as db:
        index.record(db, state, info)
        return index.get_row(db, principal.user_id, session_id)


def append_records(
    rt: Runtime, principal: Principal, session_id: str, records: list[dict[str, Any]]
) -> SessionRow:
    """Durably append records to a session and update its index row from them."""
    row = get_session(rt, principal, session_id)
    info = rt.store.append(principal.user_id, session_id, records)
    with rt.db.session() as db:
        state = _state_of(row)
        for record in records:
            state.apply(record, keep_messages=False)
        index.record(db, state, info)
        return index.get_row(db, principal.user_id, session_id)


def _state_of(row: SessionRow) -> SessionState:
    return SessionState(
        id=row.id,
        user_id=row.user_id,
        source=row.source,
        created_at=row.created_at,
        updated_at=row.updated_at,
        temporary=row.temporary,
        title=row.title,
        title_pending=row.title_pending,
        pinned=row.pinned,
        archived=row.archived,
        folder_id=row.folder_id,
        message_count=row.message_count,
        image_count=row.image_count,
    )


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
