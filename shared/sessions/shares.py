"""Read-only links to a session, for a teammate on the same server (issue 42, item 5).

- share: the owner makes a link to a snapshot of the session's current conversation (its
  user messages and answers as text, in order; tool steps, images, likes and the owner's
  memory stay behind). The snapshot is a copy in the share's row, written once: later turns,
  edits or a deletion of the session do not change what the link shows. Sharing a session
  that already has a link answers that same link (and its snapshot): a link a teammate was
  given keeps working however often the owner opens the Share menu; to share what was said
  since, the owner revokes and shares again.
- read: any signed-in user of the server with the token reads the snapshot; a revoked link,
  or one whose session was deleted, is not found.
- fork: the reader copies the snapshot into their own sessions, as an import of a shared chat
  (`imported_from.source` "shared"), with the reader's memory snapshot, never the owner's.
- revoke: the owner takes the link back; deleting the session does too (lifecycle), and the
  account's deletion removes its rows (the foreign key).

A snapshot is a copy of the owner's, counted in their storage quota (`storage.share_bytes`):
a share over the quota is refused as any write is, and revoking or deleting frees it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.accounts import storage
from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.errors import InvalidInput, NotFound
from shared.core.messages import (
    CHAT_ROLES,
    MessageRecord,
    content_text,
    message_record,
    meta_record,
)
from shared.db.orm import SessionRow, SessionShare, User
from shared.files.filestore import encode_records
from shared.index import sync
from shared.sessions.bundles import ImportedFrom
from shared.sessions.needs import SessionsRuntime
from shared.sessions.service import MemorySnapshots, get_session, refuse_in_trash

TOKEN_BYTES = 24  # secrets.token_urlsafe(24): 32 characters, 192 bits
TOKEN_PATTERN = r"[A-Za-z0-9_-]{32}"


class SharedMessage(TypedDict):
    """A message as the snapshot keeps it: what the transcript shows of it."""

    role: str
    content: str
    created_at: str | None


@dataclass(frozen=True)
class Shared:
    """A link as a reader opens it."""

    title: str | None
    shared_at: datetime
    owner: str  # the owner's username, the name the server knows them by
    messages: list[SharedMessage]


def snapshot(messages: list[MessageRecord]) -> list[SharedMessage]:
    """The conversation as a teammate reads it: user messages and answers with text, in
    order. A model's step that only called tools, and the tools' results, are left out."""
    kept: list[SharedMessage] = []
    for message in messages:
        text = content_text(message.get("content"))
        if message.get("role") in CHAT_ROLES and text.strip():
            kept.append(
                {"role": message["role"], "content": text, "created_at": message.get("created_at")}
            )
    return kept


def share_session(
    rt: SessionsRuntime, principal: Principal, session_id: str
) -> tuple[SessionShare, bool]:
    """The session's link, and whether it was made now (else the one it already had)."""
    row = get_session(rt, principal, session_id)
    refuse_in_trash(row)
    if row.temporary:
        raise InvalidInput("a temporary chat cannot be shared", code="temporary_session")
    with rt.db.session() as db:
        existing = _by_session(db, session_id)
        if existing is not None:
            return existing, False
    state, _ = rt.store.load(principal.user_id, session_id)
    messages = json.dumps(snapshot(state.messages), ensure_ascii=False)
    size = storage.share_bytes(messages)
    storage.check(rt, principal.user_id, size)
    share = SessionShare(
        token=secrets.token_urlsafe(TOKEN_BYTES),
        session_id=session_id,
        user_id=principal.user_id,
        title=state.title,
        messages=messages,
        created_at=utcnow(),
    )
    try:
        with rt.db.session() as db:
            db.add(share)
    except IntegrityError:  # shared at the same moment by another request: that link
        with rt.db.session() as db:
            existing = _by_session(db, session_id)
        if existing is None:
            raise
        return existing, False
    rt.store.usage.add(principal.user_id, "shares", size)
    return share, True


def get_share(rt: SessionsRuntime, principal: Principal, session_id: str) -> SessionShare:
    get_session(rt, principal, session_id)  # another user's session: not found
    with rt.db.session() as db:
        share = _by_session(db, session_id)
    if share is None:
        raise NotFound("this session is not shared", code="share_not_found")
    return share


def revoke_share(rt: SessionsRuntime, principal: Principal, session_id: str) -> None:
    """Take the link back (a session with none: nothing to do)."""
    get_session(rt, principal, session_id)
    with rt.db.session() as db:
        revoked = forget_session(db, session_id)
    if revoked:  # its snapshot's bytes are free: measured again at the next check
        rt.store.usage.forget(principal.user_id)


def forget_session(db: Session, session_id: str) -> bool:
    """The session's link answers 404 from now on (its session was deleted or revoked it);
    whether it had one. The caller frees its bytes in the owner's figure (a deletion does)."""
    removed = delete(SessionShare).where(SessionShare.session_id == session_id)
    return bool(db.connection().execute(removed).rowcount)


def read_shared(rt: SessionsRuntime, token: str) -> Shared:
    """The snapshot behind a link. Whoever asks is signed in (the API's check). Deleting the
    session revoked its link; one whose session is in the trash anyway (a share made as it
    was deleted) is not found either."""
    with rt.db.session() as db:
        found = db.execute(
            select(SessionShare, User.username)
            .join(User, User.id == SessionShare.user_id)
            # Outer: a dropped index (rebuilt at the owner's next listing) hides no link.
            .outerjoin(SessionRow, SessionRow.id == SessionShare.session_id)
            .where(SessionShare.token == token, SessionRow.deleted_at.is_(None))
        ).first()
    if found is None:
        raise NotFound("this link was revoked or never existed", code="share_not_found")
    share, owner = found
    messages: list[SharedMessage] = json.loads(share.messages)
    return Shared(title=share.title, shared_at=share.created_at, owner=owner, messages=messages)


def fork_shared(
    rt: SessionsRuntime, principal: Principal, memory: MemorySnapshots, token: str
) -> SessionRow:
    """A new session of the caller's holding the snapshot's messages, titled as the original
    (a title no job changes), marked as imported from a shared chat."""
    shared = read_shared(rt, token)
    user_id = principal.user_id
    records: list[Any] = [
        message_record(m["role"], m["content"], created_at=m.get("created_at"))
        for m in shared.messages
    ]
    records.append(meta_record({"title": shared.title, "title_locked": shared.title is not None}))
    storage.check(rt, user_id, len(encode_records(records)))
    imported_from: ImportedFrom = {
        "session_id": None,  # the owner's session is theirs: its id says nothing to the reader
        "source": sync.SHARED_IMPORT,
        "exported_at": isoformat(shared.shared_at),
        "imported_at": isoformat(utcnow()),
    }
    state, info = rt.store.create(
        user_id,
        source=principal.source,
        extra={"snapshot": memory.snapshot(user_id), sync.IMPORTED_FROM: imported_from},
        records=records,
    )
    with rt.db.session() as db:
        sync.record(db, state, info, text=True)
        return sync.get_row(db, user_id, state.id)


def _by_session(db: Session, session_id: str) -> SessionShare | None:
    return db.execute(
        select(SessionShare).where(SessionShare.session_id == session_id)
    ).scalar_one_or_none()
