"""Session operations as the API, the CLI and the workers see them.

Each function takes the runtime and the calling principal, checks ownership (another user's
session is simply not found), writes the file first and then keeps the index in step.
Every append of session records, from the API, a turn or a job, goes through `SessionWriter`
here (the one write path), which indexes what it wrote. Fork, clear and the trash are in
shared.sessions.lifecycle.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Protocol, TypedDict

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from shared.accounts.people import Principal
from shared.core import text
from shared.core.clock import utcnow
from shared.core.errors import Conflict, EonyxError, InvalidInput, NotFound, TooManyRequests
from shared.core.messages import meta_record
from shared.db.database import Executor
from shared.db.orm import Folder, SessionRow
from shared.files.session_store import Appended, FileInfo, SessionState, check_session_id
from shared.index import listing, search, sync
from shared.index.listing import Filters, Found
from shared.index.rows import Listed
from shared.sessions import titles
from shared.sessions.needs import SessionsRuntime

log = logging.getLogger(__name__)
TITLE_MAX = 200
FOLDER_ID_MAX = 32


def clean_title(title: str | None) -> str | None:
    """A title as given, held to the one-line text rule, with runs of spaces collapsed."""
    if title is None:
        return None
    text.check(title, "title", single_line=True)
    title = " ".join(title.split())
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"title is longer than {TITLE_MAX} characters")
    return title or None


def _check_folder_id(folder_id: str | None) -> str | None:
    """A folder id held to the text rule (it also comes from a query string)."""
    if folder_id is not None:
        text.check(folder_id, "folder_id", single_line=True)
        if len(folder_id) > FOLDER_ID_MAX:
            raise InvalidInput(f"folder_id is longer than {FOLDER_ID_MAX} characters")
    return folder_id


class MemorySnapshots(Protocol):
    """What a new session takes from the memory, a package above this one: the user profile
    and agent memory as its prompt will show them, frozen for the session's life. The caller
    passes `rt.memory` (shared.memory.files.MemoryStore), so sessions never reach up for it."""

    def snapshot(self, user_id: str) -> dict[str, str | None]: ...


def create_session(
    rt: SessionsRuntime,
    principal: Principal,
    memory: MemorySnapshots,
    *,
    title: str | None = None,
    folder_id: str | None = None,
    temporary: bool = False,
    source: str | None = None,
) -> SessionRow:
    """A new, empty session (a turn makes one with its first message: shared/chat/turns.py).
    `source`: the client that makes it, when it says (`cli` for the console clients);
    otherwise how the caller signed in."""
    title = check_new_session(rt, principal, title=title, folder_id=folder_id, empty=True)
    _, _, row = make_session(
        rt, principal, memory, title=title, folder_id=folder_id, temporary=temporary, source=source
    )
    return row


def check_new_session(
    rt: SessionsRuntime,
    principal: Principal,
    *,
    title: str | None,
    folder_id: str | None,
    empty: bool = False,
) -> str | None:
    """Every check of a new session, before anything is written; its title, cleaned.
    `empty`: it is made without a message, and counts against EMPTY_SESSIONS_PER_USER."""
    title = clean_title(title)
    _check_folder_id(folder_id)
    with rt.db.session() as db:
        if folder_id is not None:
            check_folder(db, principal.user_id, folder_id)
        if empty:
            _check_empty_sessions(rt, db, principal.user_id)
    return title


def make_session(
    rt: SessionsRuntime,
    principal: Principal,
    memory: MemorySnapshots,
    *,
    title: str | None,
    folder_id: str | None,
    temporary: bool,
    source: str | None,
    session_id: str | None = None,
    records: Sequence[Mapping[str, Any]] = (),
) -> tuple[SessionState, FileInfo, SessionRow]:
    """The session's file, with `records` in the same durable write, then its index row (a
    session whose row cannot be written is removed again, so a create the caller is told
    failed leaves nothing behind). A temporary chat takes no memory snapshot. Checked
    already (`check_new_session`)."""
    snapshot = None if temporary else memory.snapshot(principal.user_id)
    source = source or principal.source
    title = titles.for_new_session(rt, principal.user_id, title, temporary, source)
    state, info = rt.store.create(
        principal.user_id,
        source=source,
        title=title,
        folder_id=folder_id,
        temporary=temporary,
        extra={"snapshot": snapshot},
        records=records,
        session_id=session_id,
    )
    try:
        with rt.db.session() as db:
            sync.record(db, state, info)
            return state, info, sync.get_row(db, principal.user_id, state.id)
    except BaseException:
        with contextlib.suppress(EonyxError, OSError):  # the first error is the one to tell
            rt.store.delete(principal.user_id, state.id)
        raise


def _ensure_index(db: Session, rt: SessionsRuntime, user_id: str) -> None:
    if not sync.is_built(db, user_id):
        sync.reconcile_user(db, rt.store, user_id)


def _row(db: Session, rt: SessionsRuntime, user_id: str, session_id: str) -> SessionRow:
    """The caller's session row; a file the index has not seen yet is indexed on the way."""
    check_session_id(session_id)
    _ensure_index(db, rt, user_id)
    row = db.get(SessionRow, session_id)
    if row is not None and row.user_id == user_id:
        return row
    # Not indexed (written behind the index's back), or not the caller's: the file decides,
    # and another user's session is not under the caller's directory.
    state, info = rt.store.load(user_id, session_id)
    sync.record(db, state, info, text=True)
    return sync.get_row(db, user_id, session_id)


def list_sessions(
    rt: SessionsRuntime,
    principal: Principal,
    *,
    limit: int = 50,
    cursor: str | None = None,
    filters: Filters | None = None,
) -> tuple[list[Listed], str | None]:
    """A page of the caller's list: pinned first, then most recently updated (the cursor's
    guarantees are in shared.index.listing)."""
    _check_folder_id((filters or Filters()).folder_id)

    def page(db: Executor) -> tuple[list[Listed], str | None]:
        return listing.list_page(
            db, principal.user_id, filters or Filters(), limit=limit, cursor=cursor
        )

    # Read on a bare connection (no ORM session: a tenth of a millisecond less per page);
    # a user without an index gets one built, then the page, in one ORM transaction.
    with rt.db.transaction() as connection:
        try:
            return page(connection)
        except listing.IndexNotBuilt:
            pass
    with rt.db.session() as db:
        sync.reconcile_user(db, rt.store, principal.user_id)
        return page(db)


def search_sessions(
    rt: SessionsRuntime,
    principal: Principal,
    query: str,
    *,
    limit: int = 50,
    cursor: str | None = None,
    filters: Filters | None = None,
) -> tuple[list[Found], str | None]:
    """A page of the caller's sessions whose title or text match `query`, best first."""
    text.check(query, "q", single_line=True)
    _check_folder_id((filters or Filters()).folder_id)

    def page(db: Executor) -> tuple[list[Found], str | None]:
        return listing.search_page(
            db, principal.user_id, query, filters or Filters(), limit=limit, cursor=cursor
        )

    found = None
    with rt.db.transaction() as connection:  # a bare connection, as list_sessions reads
        if not search.behind(connection):
            found = page(connection)
    if found is None:  # texts wait for their batch: indexed first, in a transaction of
        with rt.db.transaction() as connection:  # their own (the search takes no write lock)
            search.catch_up(connection)
        with rt.db.transaction() as connection:
            found = page(connection)
    if found[0]:
        return found
    # A user without an index has no text either: whether it is built is only asked when
    # nothing was found (a query fewer for every search that finds something).
    with rt.db.session() as db:
        if sync.is_built(db, principal.user_id):
            return found
        sync.reconcile_user(db, rt.store, principal.user_id)
        search.catch_up(db)
        return page(db)


def get_session(rt: SessionsRuntime, principal: Principal, session_id: str) -> SessionRow:
    with rt.db.session() as db:
        return _row(db, rt, principal.user_id, session_id)


def append_records(
    rt: SessionsRuntime, principal: Principal, session_id: str, records: Sequence[Mapping[str, Any]]
) -> SessionRow:
    """Durably append records to the caller's session and index them; the file is written
    first, so a failed write changes no row."""
    get_session(rt, principal, session_id)  # another user's: not found
    append_and_index(rt, principal.user_id, session_id, records)
    return get_session(rt, principal, session_id)


def append_and_index(
    rt: SessionsRuntime, user_id: str, session_id: str, records: Sequence[Mapping[str, Any]]
) -> FileInfo:
    """Durably append records, then bring the index row up to date: one write through the
    one write path (`SessionWriter`)."""
    with SessionWriter(rt, user_id, session_id) as writer:
        return writer.append(records)


class SessionWriter:
    """The one write path of session records: every writer (API, turns, workers) appends
    through one, and it brings the index row up to date with what it wrote when it closes.

        with SessionWriter(rt, user_id, session_id) as writer:
            writer.append(records)

    Each append is on disk (fsynced) before it returns, and nothing continues past the disk.
    The index is updated once, at the close, not once per append: a turn appends several
    times under its lock (the user's message, each tool round, the answer) and pays for one
    index transaction whatever its number of rounds. The row is a cache of the file, so a
    process that dies before the close loses nothing that the next reconcile does not
    repair, and a close after a failed turn still indexes what was saved.

    `size_before` is the file's size the row should describe before these appends (a turn
    passes the size it loaded under its lock); by default, the size the first append found.
    An import, whose session is listed only once whole, writes through `append_unlisted`.
    """

    def __init__(
        self, rt: SessionsRuntime, user_id: str, session_id: str, *, size_before: int | None = None
    ) -> None:
        self.rt = rt
        self.user_id = user_id
        self.session_id = session_id
        self.size_before = size_before
        self.written: list[Mapping[str, Any]] = []
        self.info: FileInfo | None = None  # the file after the last append; None: no append

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def append(self, records: Sequence[Mapping[str, Any]]) -> FileInfo:
        """Durably append records: NotFound for a missing session, StorageError if the disk
        fails (then nothing of them is indexed)."""
        return self._wrote(records, self.rt.store.append(self.user_id, self.session_id, records))

    def append_if(
        self, decide: Callable[[SessionState], Sequence[Mapping[str, Any]] | None]
    ) -> FileInfo | None:
        """Append what `decide(state)` returns, decided under the file's lock in the same
        step as the write (`SessionStore.append_if`). None when it returned nothing."""
        decided: list[Mapping[str, Any]] = []

        def keep(state: SessionState) -> Sequence[Mapping[str, Any]] | None:
            records = decide(state)
            decided[:] = records or []
            return records

        appended = self.rt.store.append_if(self.user_id, self.session_id, keep)
        return None if appended is None else self._wrote(decided, appended)

    def _wrote(self, records: Sequence[Mapping[str, Any]], appended: Appended) -> FileInfo:
        if self.size_before is None:
            self.size_before = appended.size_before
        self.written.extend(records)
        self.info = appended.info
        return appended.info

    def close(self) -> None:
        """Index what was written (nothing to do when nothing was); a failure is logged."""
        if self.info is None or self.size_before is None:
            return
        index_appended(
            self.rt, self.user_id, self.session_id, self.written, self.size_before, self.info
        )
        self.written, self.info, self.size_before = [], None, None


def append_unlisted(
    rt: SessionsRuntime, user_id: str, session_id: str, records: Sequence[Mapping[str, Any]]
) -> FileInfo:
    """Append to a session the list does not show yet (an import being written) and make
    the records' text searchable at once. Its row is recorded by the caller when the session
    is whole (`sync.record`), so a half-written import is never listed, and the records are
    indexed a batch at a time, never read back: an import holds no more than a batch."""
    info = rt.store.append(user_id, session_id, records).info
    docs = search.docs_of(user_id, session_id, records)
    if docs:
        with rt.db.session() as db:
            sync.lock_user(db, user_id)
            search.add(db, docs)
    return info


def append_meta(
    rt: SessionsRuntime, user_id: str, session_id: str, changes: Mapping[str, object]
) -> None:
    """Record metadata (a title, like status, extraction progress...) in the session."""
    append_and_index(rt, user_id, session_id, [meta_record(changes)])


def index_appended(
    rt: SessionsRuntime,
    user_id: str,
    session_id: str,
    records: Sequence[Mapping[str, Any]],
    size_before: int,
    info: FileInfo,
) -> None:
    """Bring the index row up to date with records already on disk. The index is a cache:
    if this fails the file still holds everything, and the next reconcile repairs the row,
    so a failure is logged, never raised past a write that succeeded."""
    try:
        if not sync.note_appended(rt.db, user_id, session_id, records, size_before, info):
            state, info = rt.store.load(user_id, session_id)
            with rt.db.transaction() as db:
                sync.record(db, state, info, text=True)
    except (SQLAlchemyError, NotFound) as exc:
        log.warning(
            "index of session %s not updated (%s); the next reconcile will", session_id, exc
        )


class SessionPatch(TypedDict, total=False):
    """What `PATCH /sessions/<id>` may change."""

    title: str | None
    pinned: bool
    archived: bool
    folder_id: str | None


def update_session(
    rt: SessionsRuntime, principal: Principal, session_id: str, patch: SessionPatch
) -> SessionRow:
    """Apply PATCH fields (title, pinned, archived, folder_id) as one meta record. A title
    given here is a rename, and final: `title_locked` keeps every title job and title mode
    from changing it afterwards."""
    changes: dict[str, object] = dict(patch)
    if "title" in patch:
        title = changes["title"] = clean_title(patch["title"])
        if patch["title"] is not None and title is None:  # "" or spaces: a slip, not a wish
            raise InvalidInput(
                "title must not be empty: give the new title (null removes it)",
                code="empty_title",
                param="title",
            )
        changes["title_pending"] = False
        changes[titles.TITLE_LOCKED] = True
    folder_id = patch.get("folder_id")
    if "folder_id" in patch:
        _check_folder_id(folder_id)
    if folder_id is not None:
        with rt.db.session() as db:
            check_folder(db, principal.user_id, folder_id)
    row = get_session(rt, principal, session_id)
    if not changes:
        return row
    refuse_in_trash(row)
    return append_records(rt, principal, session_id, [meta_record(changes)])


def check_folder(db: Session, user_id: str, folder_id: str) -> None:
    """A session can be filed only into a folder of its owner's (404 otherwise)."""
    folder = db.get(Folder, folder_id)
    if folder is None or folder.user_id != user_id:
        raise NotFound("folder not found", code="folder_not_found")


def session_ids_in_folder(rt: SessionsRuntime, user_id: str, folder_id: str) -> list[str]:
    """Every session of the user filed in `folder_id` (archived and temporary included)."""
    with rt.db.session() as db:
        _ensure_index(db, rt, user_id)
        return list(
            db.scalars(
                select(SessionRow.id).where(
                    SessionRow.user_id == user_id, SessionRow.folder_id == folder_id
                )
            )
        )


def check_exists(rt: SessionsRuntime, user_id: str, session_id: str) -> None:
    """NotFound unless the user has the session's file: a stat, for a turn's plan (another
    user's session is not under this user's directory)."""
    if not rt.store.path(user_id, session_id).is_file():
        raise NotFound("session not found")


def refuse_in_trash(session: SessionRow | SessionState) -> None:
    """The trash rule: a session in the trash takes no turn, edit, fork or clear until it is
    restored. Checked on the index row by the API's operations, and on the file's state by
    the writers that hold the file (a turn under its lock, a clear's rewrite)."""
    if session.deleted_at is not None:
        raise Conflict("the session is in the trash; restore it first", code="session_in_trash")


def _check_empty_sessions(rt: SessionsRuntime, db: Session, user_id: str) -> None:
    """A user holding EMPTY_SESSIONS_PER_USER sessions with no message makes no more (429
    `too_many_empty_sessions`): the clients make a session with its first message
    (POST /sessions/turns), and the sweep removes an empty one after
    EMPTY_SESSION_GRACE_SECONDS, so only a script making sessions in a loop meets the cap.
    Made at the same moment, a few may pass it (the count is not locked)."""
    cap = rt.settings.empty_sessions_per_user
    if not cap:
        return
    count, oldest = sync.empty_of(db, user_id)
    if count < cap:
        return
    grace = rt.settings.empty_session_grace_seconds
    seconds = grace
    if oldest is not None:  # when the sweep may take the oldest
        seconds = int((oldest + timedelta(seconds=grace) - utcnow()).total_seconds())
    raise TooManyRequests(
        f"you hold {count} sessions with no message, the most an account may "
        f"(EMPTY_SESSIONS_PER_USER={cap}): send a message in one of them, or delete some; "
        f"empty sessions are removed {grace} s after their last change",
        retry_after=max(1, seconds),
        code="too_many_empty_sessions",
    )


def discard_unanswered(rt: SessionsRuntime, user_id: str, session_id: str) -> None:
    """Remove a session a turn made whose first answer failed, if no answer was saved in it
    (shared/chat/turns.py, for an OpenAI-style client: it sends its whole request again,
    which makes a session anew, and this one would stay as an unanswered duplicate)."""

    def unanswered(state: SessionState) -> bool:
        return state.message_count == state.user_messages  # user messages only, if any

    if rt.store.delete_if(user_id, session_id, unanswered):
        with rt.db.session() as db:
            sync.forget(db, session_id)
