"""The index is a cache of the session files: drop it, rebuild it, lose nothing."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from datetime import UTC

import pytest
from sqlalchemy import text

from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import message_record
from shared.db.orm import SessionRow
from shared.files.session_store import SessionStore
from shared.index import sync
from shared.index.listing import Filters
from shared.index.rows import Listed
from shared.runtime import Runtime
from shared.sessions import lifecycle
from shared.sessions import service as session_service
from tests.conftest import Account, Backend


def principal(account: Account) -> Principal:
    return Principal(account.user_id, account.username, False, "web", "")


def say(rt: Runtime, who: Principal, session_id: str, text: str) -> None:
    record = {
        "type": "message",
        "id": os.urandom(8).hex(),
        "role": "user",
        "content": text,
        "created_at": isoformat(utcnow()),
    }
    session_service.append_records(rt, who, session_id, [record])


def listing(rt: Runtime, who: Principal) -> list[tuple[str, str | None, int, bool]]:
    rows, _ = session_service.list_sessions(rt, who, limit=200)
    return [(r.id, r.title, r.message_count, r.pinned) for r in rows]


def test_drop_the_index_and_list_again_gives_the_same_result(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    for n in range(5):
        row = session_service.create_session(rt, me, rt.memory, title=f"chat {n}")
        say(rt, me, row.id, f"hello {n}")
    session_service.update_session(rt, me, row.id, {"pinned": True})
    before = listing(rt, me)
    assert before[0] == (row.id, "chat 4", 1, True)

    with rt.db.session() as db:
        sync.drop(db)
    assert listing(rt, me) == before


def test_rebuild_rereads_only_files_changed_behind_its_back(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    ids = [session_service.create_session(rt, me, rt.memory, title=f"c{n}").id for n in range(3)]
    report = sync.rebuild(rt.db, rt.store)
    assert (report.scanned, report.reread, report.removed) == (3, 0, 0)

    # Another process (or a person) changes one file and deletes another.
    time.sleep(0.01)
    rt.store.append(
        alice.user_id,
        ids[0],
        [{"type": "meta", "at": isoformat(utcnow()), "set": {"title": "renamed on disk"}}],
    )
    rt.store.path(alice.user_id, ids[1]).unlink()

    report = sync.rebuild(rt.db, rt.store)
    assert (report.scanned, report.reread, report.removed) == (2, 1, 1)
    titles = {session_id: title for session_id, title, _, _ in listing(rt, me)}
    assert titles == {ids[0]: "renamed on disk", ids[2]: "c2"}


def test_a_file_added_behind_the_index_is_found_by_get(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    row = session_service.create_session(rt, me, rt.memory, title="x")
    with rt.db.session() as db:
        sync.forget(db, row.id)
    assert session_service.get_session(rt, me, row.id).title == "x"


def test_pages_stay_stable_while_sessions_are_written(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    ids = [session_service.create_session(rt, me, rt.memory, title=f"s{n}").id for n in range(7)]
    first, cursor = session_service.list_sessions(rt, me, limit=3)
    assert [r.id for r in first] == ids[::-1][:3]

    # While the user pages, a session on page 1 gets a new message, and a new one appears.
    say(rt, me, first[0].id, "new message")
    session_service.create_session(rt, me, rt.memory, title="brand new")

    seen = [r.id for r in first]
    while cursor:
        page, cursor = session_service.list_sessions(rt, me, limit=3, cursor=cursor)
        seen += [r.id for r in page]
    assert sorted(seen) == sorted(ids)  # every older session exactly once
    assert len(seen) == len(set(seen))


def test_pinned_first_then_most_recent(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    a, b, c = (session_service.create_session(rt, me, rt.memory, title=t).id for t in "abc")
    session_service.update_session(rt, me, a, {"pinned": True})
    say(rt, me, b, "bump")
    assert [r[0] for r in listing(rt, me)] == [a, b, c]


def test_search_matches_title_words_and_ignores_wildcards(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    session_service.create_session(rt, me, rt.memory, title="Parser bugs")
    session_service.create_session(rt, me, rt.memory, title="100% done")
    session_service.create_session(rt, me, rt.memory, title="lunch")
    found, _ = session_service.search_sessions(rt, me, "parser")
    assert [f.row.title for f in found] == ["Parser bugs"]
    found, _ = session_service.search_sessions(rt, me, "100%")
    assert [f.row.title for f in found] == ["100% done"]
    assert session_service.search_sessions(rt, me, "%")[0] == []  # no word: nothing


def test_sweep_removes_only_old_empty_sessions(rt: Runtime, alice: Account) -> None:
    me = principal(alice)
    empty = session_service.create_session(rt, me, rt.memory, title="empty").id
    used = session_service.create_session(rt, me, rt.memory, title="used").id
    say(rt, me, used, "hi")
    assert lifecycle.sweep_empty_sessions(rt) == 0  # still within the grace period

    rt.settings = rt.settings.with_changes(empty_session_grace_seconds=0)
    time.sleep(0.01)
    assert lifecycle.sweep_empty_sessions(rt) == 1
    assert [r[0] for r in listing(rt, me)] == [used]
    assert not rt.store.path(alice.user_id, empty).exists()


def test_a_write_that_indexes_mid_turn_does_not_make_the_turn_count_twice(
    rt: Runtime, alice: Account
) -> None:
    """A turn indexes its records once, at its end; a like or an extraction marker written
    meanwhile indexes the file first. Every message must still be counted exactly once."""
    me = principal(alice)
    session_id = session_service.create_session(rt, me, rt.memory, title="t").id
    _, loaded = rt.store.load(alice.user_id, session_id)
    question = {
        "type": "message",
        "id": "q1",
        "role": "user",
        "content": "hi",
        "created_at": isoformat(utcnow()),
    }
    first = rt.store.append(alice.user_id, session_id, [question])  # the turn, on disk only
    session_service.append_meta(rt, alice.user_id, session_id, {"likes": {}})  # meanwhile
    answer = {**question, "id": "a1", "role": "assistant"}
    last = rt.store.append(alice.user_id, session_id, [answer])
    assert first.size_before == loaded.size
    session_service.index_appended(
        rt, alice.user_id, session_id, [question, answer], loaded.size, last.info
    )
    assert session_service.get_session(rt, me, session_id).message_count == 2


def fold_together(rt: Runtime, who: Account, sessions: list[str]) -> None:
    """One answer per session on disk, then their folds queued behind a write in progress
    and written together, as turns that end at the same time are (FoldQueue in
    shared/index/appends.py); the n-th answer says together<n>."""
    turns = []
    for n, session_id in enumerate(sessions):
        answer = message_record("assistant", f"together{n}")
        appended = rt.store.append(who.user_id, session_id, [answer])
        fold = (rt, who.user_id, session_id, [answer], appended.size_before, appended.info)
        turns.append(threading.Thread(target=session_service.index_appended, args=fold))
    queue = sync._fold_queue(rt.db)
    with queue._writing:  # a write in progress: every turn below queues behind it
        for turn in turns:
            turn.start()
        deadline = time.monotonic() + 30
        while len(queue._queued) < len(turns) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(queue._queued) == len(turns)
    for turn in turns:
        turn.join()


def test_turns_that_end_together_are_indexed_together_each_counted_once(
    rt: Runtime, alice: Account
) -> None:
    """Folds queued behind a write go into the next transaction together (FoldQueue in
    shared/index/appends.py): each turn counted once and searchable, and the one whose row
    no longer matches its file refolded from the file, without undoing the others."""
    me = principal(alice)
    sessions = [
        session_service.create_session(rt, me, rt.memory, title=f"chat {n}").id for n in range(6)
    ]
    stale = sessions[-1]  # a message written behind the index's back: its row is stale
    rt.store.append(alice.user_id, stale, [message_record("user", "written behind its back")])
    fold_together(rt, alice, sessions)
    with rt.db.session() as db:  # the rows as written (a listing would repair a stale one)
        counts = {sid: sync.get_row(db, alice.user_id, sid).message_count for sid in sessions}
    assert counts == {session_id: 2 if session_id == stale else 1 for session_id in sessions}
    for n, session_id in enumerate(sessions):
        found, _ = session_service.search_sessions(rt, me, f"together{n}")
        assert [hit.row.id for hit in found] == [session_id]


def test_a_batch_the_database_refuses_is_logged_by_each_turn_and_repaired_from_the_files(
    rt: Runtime, alice: Account, caplog: pytest.LogCaptureFixture
) -> None:
    """Every turn of a failed batch hears of it: each logs that its session's index was not
    updated (none raises: the answers are on disk), and the rows come back from the files."""
    me = principal(alice)
    sessions = [
        session_service.create_session(rt, me, rt.memory, title=f"chat {n}").id for n in range(3)
    ]
    with rt.db.transaction() as db:  # the index table gone for a moment: the batch fails
        db.execute(text("ALTER TABLE session_index RENAME TO session_index_away"))
    try:
        with caplog.at_level(logging.WARNING, logger="shared.sessions.service"):
            fold_together(rt, alice, sessions)
    finally:
        with rt.db.transaction() as db:
            db.execute(text("ALTER TABLE session_index_away RENAME TO session_index"))
    warned = [r.getMessage() for r in caplog.records if "not updated" in r.getMessage()]
    assert sorted(w.split()[3] for w in warned) == sorted(sessions)
    assert {row[0]: row[2] for row in listing(rt, me)} == dict.fromkeys(sessions, 1)


def test_only_a_message_reorders_the_list(rt: Runtime, alice: Account) -> None:
    """The list is ordered by the last message: bookkeeping, a rename, an archive and back
    leave a session where it was (seen before: a rename moved it up)."""
    me = principal(alice)
    older = session_service.create_session(rt, me, rt.memory, title="older").id
    newer = session_service.create_session(rt, me, rt.memory, title="newer").id
    session_service.append_meta(rt, alice.user_id, older, {"extracted_turns": 4})
    session_service.update_session(rt, me, older, {"title": "renamed"})
    session_service.update_session(rt, me, older, {"archived": True})
    session_service.update_session(rt, me, older, {"archived": False})
    assert [r[0] for r in listing(rt, me)] == [newer, older]
    session_service.append_records(rt, me, older, [message_record("user", "news")])
    assert [r[0] for r in listing(rt, me)] == [older, newer]


def _hand_written(rt: Runtime, user_id: str, session_id: str, header: dict) -> None:
    """A session file written behind Eonyx's back (a person, an old version, a bad disk)."""
    path = rt.store.path(user_id, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(header) + "\n")


def test_a_rebuild_reports_what_it_cannot_index_and_goes_on(
    rt: Runtime, alice: Account, bob: Account, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = principal(alice)
    good = [
        session_service.create_session(rt, me, rt.memory, title=f"good {n}").id for n in range(2)
    ]
    # a file that cannot be read as a session, and one whose folder id is longer than the
    # index column (PostgreSQL refuses that row; SQLite takes it)
    _hand_written(rt, alice.user_id, "20260101T000000-0000dead", {"type": "session"})
    header = {
        "type": "session",
        "id": "20260101T000001-0000beef",
        "user_id": alice.user_id,
        "created_at": "2026-01-01T00:00:01Z",
        "folder_id": "f" * 40,
    }
    _hand_written(rt, alice.user_id, header["id"], header)
    session_service.create_session(rt, principal(bob), rt.memory, title="bob's")
    real_scan = SessionStore.scan

    def scan(store: SessionStore, user_id: str):  # type: ignore[no-untyped-def]
        if user_id == bob.user_id:
            raise PermissionError(13, "Permission denied", "users/bob/sessions")
        return real_scan(store, user_id)

    with rt.db.session() as db:
        sync.drop(db)
    monkeypatch.setattr(SessionStore, "scan", scan)
    report = sync.rebuild(rt.db, rt.store)

    failed = "\n".join(report.failed)
    assert f"{alice.user_id}/20260101T000000-0000dead: " in failed
    assert f"{bob.user_id}: " in failed
    assert "Permission denied" in failed
    long_folder_refused = backend.name == "services"
    assert (f"{alice.user_id}/{header['id']}: " in failed) == long_folder_refused
    assert len(report.failed) == 2 + long_folder_refused
    listed = {row[0] for row in listing(rt, me)}
    assert set(good) <= listed  # the rest of alice's sessions are indexed
    json.dumps(vars(report))  # the worker's job result is JSON


def test_a_listing_that_rebuilds_the_index_skips_a_row_the_database_refuses(
    rt: Runtime, alice: Account
) -> None:
    me = principal(alice)
    good = session_service.create_session(rt, me, rt.memory, title="good").id
    header = {
        "type": "session",
        "id": "20260101T000001-0000beef",
        "user_id": alice.user_id,
        "created_at": "2026-01-01T00:00:01",  # no zone: taken as UTC
        "title": "x\x00y",
        "folder_id": "f" * 40,
    }
    _hand_written(rt, alice.user_id, header["id"], header)
    with rt.db.session() as db:
        sync.drop(db)
    assert good in {row[0] for row in listing(rt, me)}


def test_a_turns_time_is_stored_as_every_other_write_stores_it(rt: Runtime, alice: Account) -> None:
    """The turn's index write (driver SQL) keeps times in the form SQLAlchemy writes them, so
    a listing cursor compares every row alike (on SQLite a time on a whole second was once
    stored without its fraction, and sorted before the same time written by the ORM)."""
    me = principal(alice)
    session_id = session_service.create_session(rt, me, rt.memory, title="t").id
    at = utcnow().replace(microsecond=0)
    said = message_record("user", "on the second") | {"created_at": isoformat(at)}
    session_service.append_records(rt, me, session_id, [said])
    assert session_service.get_session(rt, me, session_id).updated_at == at
    if rt.db.engine.dialect.name == "sqlite":
        with rt.db.session() as db:
            stored = db.execute(
                text("SELECT updated_at FROM session_index WHERE id = :id"), {"id": session_id}
            ).scalar()
        assert stored == at.strftime("%Y-%m-%d %H:%M:%S.%f")


def test_a_listed_row_holds_what_the_orm_row_holds(rt: Runtime, alice: Account) -> None:
    """The pages read their rows on the driver's cursor (shared.index.rows): every column
    of session_index, with the values and types a SessionRow has (aware UTC times)."""
    me = principal(alice)
    pinned = session_service.create_session(rt, me, rt.memory, title="pinned").id
    session_service.update_session(rt, me, pinned, {"pinned": True})
    session_service.create_session(rt, me, rt.memory, title=None)
    trashed = session_service.create_session(rt, me, rt.memory, title="trashed").id
    lifecycle.delete_session(rt, me, trashed)
    listed, _ = session_service.list_sessions(rt, me)
    in_trash, _ = session_service.list_sessions(rt, me, filters=Filters(trash=True))
    columns = [column.name for column in SessionRow.__table__.columns]
    assert [field.name for field in dataclasses.fields(Listed)] == columns
    assert len(listed) == 2
    assert [row.id for row in in_trash] == [trashed]
    for row in [*listed, *in_trash]:
        with rt.db.session() as db:
            orm = db.get(SessionRow, row.id)
        for name in columns:
            value, expected = getattr(row, name), getattr(orm, name)
            assert (value, type(value)) == (expected, type(expected)), name
        assert row.updated_at.tzinfo is UTC
