"""Fork, clear and the trash: the operations that copy, rewrite or remove a session file.

- fork: a new session with a copy of the messages (all of them, or up to one), of the
  session's directory (its images, as hard links: a fork stores only its transcript) and of
  its compaction summary when the summary still
  applies to the copy. It records where it came from (`forked_from`, `forked_at`), keeps the
  memory snapshot and project context, and starts with no likes; it lands at the top.
- clear: an atomic rewrite keeping the header (id, creation time, source, memory snapshot) and
  the metadata (title and its lock, pin, archive, folder); every message, like and extraction
  mark goes, and so does the session's directory. It waits for no running turn: it refuses.
- trash: delete sets `deleted_at` (the session keeps its place, leaves the list and search);
  restore clears it; purge removes the file, its directory, its row and its text. The sweep
  purges what has been in the trash for TRASH_DAYS, and forgets stale listing moves.
- the empty sweep: sessions that never had a message (and were never cleared) go once the
  grace period has passed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from shared.accounts import storage
from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.errors import Conflict, EonyxError, InvalidInput, NotFound
from shared.core.messages import (
    MessageRecord,
    count_answered,
    exchanges,
    in_tool_step,
    meta_record,
)
from shared.db.orm import SessionRow
from shared.files.filestore import encode_records, link_tree, remove_tree
from shared.files.session_state import meta_count, meta_mapping, meta_text
from shared.files.session_store import SUMMARY_FILE, SessionState, fold
from shared.index import listing, sync
from shared.sessions import shares
from shared.sessions.needs import SessionsRuntime
from shared.sessions.service import (
    TITLE_MAX,
    append_meta,
    clean_title,
    get_session,
    refuse_in_trash,
)
from shared.sessions.turn_lock import hold_turn_lock

log = logging.getLogger(__name__)
TRASH_DAYS = 30
CLEAR_WAIT = 5.0  # seconds a clear waits for the session's turn lock before refusing
FORK_MARK = " (fork)"
# Meta keys a fork carries over, of packages above (their accessors read them there).
EXTRACTION_MARK = "extracted_turns"  # shared.memory.extraction.MARKER
PROJECT_CONTEXT = "project_context"  # shared.chat.project_context.PROJECT_CONTEXT
SNAPSHOT = "snapshot"  # shared.memory.files.SNAPSHOT (a header key)
CLEARED_AT = "cleared_at"  # the meta key of `clear_session`: when (an ISO time)


def fork_session(
    rt: SessionsRuntime,
    principal: Principal,
    session_id: str,
    *,
    title: str | None = None,
    message_id: str | None = None,
) -> SessionRow:
    refuse_in_trash(get_session(rt, principal, session_id))
    user_id = principal.user_id
    original, _ = rt.store.load(user_id, session_id)
    messages = _fork_point(original.messages, message_id)
    now = isoformat(utcnow())
    changes: dict[str, object] = {
        "title": clean_title(title) if title is not None else fork_title(original.title),
        "title_locked": original.title_locked or title is not None,
    }
    context = meta_mapping(original, PROJECT_CONTEXT)
    if context is not None:
        changes[PROJECT_CONTEXT] = context
    mark = meta_count(original, EXTRACTION_MARK)
    if mark:
        changes[EXTRACTION_MARK] = min(mark, count_answered(exchanges(messages)))
    records = [*messages, meta_record(changes, now)]
    storage.check(rt, user_id, len(encode_records(records)))  # the images are linked
    state, info = rt.store.create(
        user_id,
        source=principal.source,
        folder_id=original.folder_id,
        extra={
            SNAPSHOT: original.meta.get(SNAPSHOT),
            "forked_from": session_id,
            "forked_at": messages[-1]["id"] if messages else None,
        },
        records=records,
    )
    try:
        _copy_files(rt, user_id, session_id, state.id, messages)
        with rt.db.session() as db:
            sync.record(db, state, info, text=True)
            return sync.get_row(db, user_id, state.id)
    except BaseException:
        # A fork the caller is told failed leaves nothing behind (the first error is told).
        with contextlib.suppress(EonyxError, OSError):
            rt.store.delete(user_id, state.id)
        raise


def fork_title(title: str | None) -> str | None:
    """`<title> (fork)`: a fork is told apart from its original in every list."""
    if title is None:
        return None
    return f"{title[: TITLE_MAX - len(FORK_MARK)].rstrip()}{FORK_MARK}"


def _fork_point(messages: list[MessageRecord], message_id: str | None) -> list[MessageRecord]:
    """The messages a fork copies: all, or up to `message_id`, which must end a step of the
    conversation (a user message or a final answer, never half of a tool call)."""
    if message_id is None:
        return messages
    for position, message in enumerate(messages):
        if message.get("id") != message_id:
            continue
        if in_tool_step(message):
            raise InvalidInput(
                "a fork starts after a user message or an answer, not inside a tool call",
                code="not_a_fork_point",
            )
        return messages[: position + 1]
    raise NotFound(f"no message {message_id} in this session")


def _copy_files(
    rt: SessionsRuntime, user_id: str, source: str, target: str, messages: list[MessageRecord]
) -> None:
    """The session's directory without its summary, then the summary if the copy still has
    the message it covers through."""
    link_tree(
        rt.store.sidecar_dir(user_id, source),
        rt.store.sidecar_dir(user_id, target),
        skip=(SUMMARY_FILE,),
    )
    summary = rt.store.read_summary(user_id, source)
    covered = summary.get("covered_through") if summary else None
    if summary and covered in {m.get("id") for m in messages}:
        rt.store.write_summary(user_id, target, summary)


def clear_session(rt: SessionsRuntime, principal: Principal, session_id: str) -> SessionRow:
    refuse_in_trash(get_session(rt, principal, session_id))
    user_id = principal.user_id
    try:
        with hold_turn_lock(rt, session_id, wait=CLEAR_WAIT):
            state, info = rt.store.rewrite(user_id, session_id, _cleared)
            remove_tree(rt.store.sidecar_dir(user_id, session_id))
    except Conflict as exc:
        if exc.code != "busy":
            raise
        raise Conflict(
            "a turn is running in this session; clear it when the turn has ended",
            code="turn_in_progress",
        ) from None
    with rt.db.session() as db:
        sync.record(db, state, info, text=True)
        return sync.get_row(db, user_id, session_id)


def _cleared(records: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
    current: SessionState = fold(records, keep_messages=False)
    refuse_in_trash(current)
    keep = {
        "title": current.title,
        "title_pending": False,
        "title_locked": current.title_locked,
        "pinned": current.pinned,
        "archived": current.archived,
        "folder_id": current.folder_id,
    }
    moment = keep[CLEARED_AT] = isoformat(utcnow())
    return [records[0], meta_record(keep, moment)]


def cleared_at(state: SessionState) -> str | None:
    """When the session's history was last cleared (an ISO time), if ever."""
    return meta_text(state, CLEARED_AT)


def delete_session(
    rt: SessionsRuntime, principal: Principal, session_id: str, *, purge: bool = False
) -> None:
    """To the trash (again is a no-op), or, with `purge`, gone at once."""
    row = get_session(rt, principal, session_id)
    with rt.db.session() as db:
        shares.forget_session(db, session_id)  # its link answers 404, restored or not
    if purge:
        purge_session(rt, principal.user_id, session_id)
    elif row.deleted_at is None:
        append_meta(rt, principal.user_id, session_id, {"deleted_at": isoformat(utcnow())})
        rt.store.usage.forget(principal.user_id)  # its bytes are the trash's now


def restore_session(rt: SessionsRuntime, principal: Principal, session_id: str) -> SessionRow:
    """Out of the trash, back at its place in the list (restoring twice is a no-op)."""
    row = get_session(rt, principal, session_id)
    if row.deleted_at is not None:
        append_meta(rt, principal.user_id, session_id, {"deleted_at": None})
        rt.store.usage.forget(principal.user_id)
    return get_session(rt, principal, session_id)


def purge_session(rt: SessionsRuntime, user_id: str, session_id: str) -> None:
    try:
        rt.store.delete(user_id, session_id)
    finally:  # gone from disk or already gone: the index forgets it either way
        with rt.db.session() as db:
            sync.forget(db, session_id)


def sweep_empty_sessions(rt: SessionsRuntime) -> int:
    """Remove sessions that never got a message and are older than the grace period.

    Candidates come from the index (cheap); each one is confirmed against its file under the
    session lock, so a session that just received its first message is never removed.
    """
    cutoff = utcnow() - timedelta(seconds=rt.settings.empty_session_grace_seconds)
    with rt.db.session() as db:
        candidates = sync.empty_before(db, cutoff)
    removed = 0
    for user_id, session_id in candidates:
        if rt.store.delete_if(user_id, session_id, partial(_never_used, older_than=cutoff)):
            removed += 1
            with rt.db.session() as db:
                sync.forget(db, session_id)
    return removed


def _never_used(state: SessionState, older_than: datetime) -> bool:
    """No message, no image, unchanged since `older_than`, and never cleared (a cleared
    session had messages: it stays)."""
    return not (
        state.message_count
        or state.image_count
        or state.updated_at > older_than
        or cleared_at(state) is not None
    )


def purge_trash(rt: SessionsRuntime, now: datetime | None = None) -> int:
    """Remove sessions in the trash for TRASH_DAYS. Candidates come from the index; each is
    confirmed against its file under the file's lock (a session restored meanwhile stays)."""
    now = now or utcnow()
    cutoff = now - timedelta(days=TRASH_DAYS)
    with rt.db.session() as db:
        candidates = sync.trashed_before(db, cutoff)
        sync.prune_moves(db, now - listing.MOVES_KEPT)
    purged = 0
    for user_id, session_id in candidates:
        expired = rt.store.delete_if(
            user_id,
            session_id,
            lambda state: state.deleted_at is not None and state.deleted_at < cutoff,
        )
        if expired:
            purged += 1
            with rt.db.session() as db:
                sync.forget(db, session_id)
    if purged:
        log.info("purged %d sessions from the trash", purged)
    return purged
