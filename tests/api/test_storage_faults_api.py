"""The store's disk refuses writes (full, or mounted read-only): each write answers 503
`storage_error` with the reason, what was saved stays readable, a create that failed leaves
no file, and an empty session file (left by an older version) is no session.

DATA_DIR is a small tmpfs (tests/disks.py); the database and Redis live elsewhere, as on a
deployment whose shared volume fails. The whole server on a full disk, SQLite and Redis on it
too: tests/cli/test_serve_disk.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.index import sync
from tests.api.conftest import API, Chat
from tests.disks import empty, fill, needs_root, read_only, tmpfs
from tests.fake_llm import text

pytestmark = needs_root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "store", "4m") as mounted:
        yield mounted


@pytest.fixture
def chat(store: Path, make_chat: Callable[..., Chat]) -> Chat:
    built = make_chat(DATA_DIR=str(store))
    built.llm.set_default(lambda _request: text("Noted."))
    return built


def session_files(store: Path) -> list[Path]:
    return sorted(store.glob("users/*/sessions/*.jsonl"))


def a_session_with_a_turn(chat: Chat) -> dict[str, Any]:
    session_id = chat.new_session()
    turn = chat.turn(session_id, content="hello")
    assert turn.status_code == 200, turn.get_json()
    liked = turn.get_json()["user_message"]["id"]
    put = chat.client.put(
        f"{API}/memory/user", json={"content": "- Likes tea\n"}, headers=chat.user.headers
    )
    assert put.status_code == 200
    return {"session": session_id, "message": liked}


def store_writes(ids: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The routes that write to the store, with a body each accepts on a healthy disk."""
    session = ids["session"]
    return [
        ("POST", f"{API}/sessions", {"json": {"title": "New"}}),
        ("POST", f"{API}/sessions/{session}/turns", {"json": {"content": "more"}}),
        ("PATCH", f"{API}/sessions/{session}", {"json": {"title": "Renamed"}}),
        ("POST", f"{API}/sessions/{session}/fork", {"json": {}}),
        ("POST", f"{API}/sessions/{session}/messages/{ids['message']}/like", {}),
        ("POST", f"{API}/sessions/{session}/clear", {}),
        ("DELETE", f"{API}/sessions/{session}", {}),
        ("PUT", f"{API}/memory/user", {"json": {"content": "- Likes coffee\n"}}),
        ("PUT", f"{API}/memory/agent", {"json": {"content": "- Be brief\n"}}),
    ]


def answers(chat: Chat, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    found = {}
    for method, path, options in calls:
        response = chat.client.open(path, method=method, headers=chat.user.headers, **options)
        found[f"{method} {path}"] = (response.status_code, response.get_json(silent=True))
    return found


def refused_with(found: dict[str, Any], reason: str) -> dict[str, Any]:
    """The answers that are not a 503 storage_error naming `reason`."""
    return {
        call: answer
        for call, answer in found.items()
        if answer[0] != 503
        or answer[1]["error"]["code"] != "storage_error"
        or reason not in answer[1]["error"]["message"]
    }


def test_a_read_only_store_answers_503_on_every_write_and_keeps_what_was_saved(
    chat: Chat, store: Path
) -> None:
    ids = a_session_with_a_turn(chat)
    before = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    with read_only(store):
        found = answers(chat, store_writes(ids))
        assert not refused_with(found, "Read-only file system"), found
        put = found[f"PUT {API}/memory/user"]  # its backup, first, is refused: said as such
        assert put[1]["error"]["message"] == "could not back up USER.md: Read-only file system"
        transcript = chat.transcript(ids["session"])
        assert transcript == [("user", "hello"), ("assistant", "Noted.")]
    after = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    assert after == before


def test_a_full_store_answers_503_and_a_failed_create_leaves_no_file(
    chat: Chat, store: Path
) -> None:
    ids = a_session_with_a_turn(chat)
    files = session_files(store)
    fill(store)
    found = answers(chat, store_writes(ids))
    # A file's last page may still hold an appended line (a like, a turn): that write is
    # saved, and answered as such. Whatever needs a new block is refused, and nothing 500s.
    needs_room = (f"POST {API}/sessions", "/fork", "/clear", "/memory/user", "/memory/agent")
    must_fail = {call: a for call, a in found.items() if call.endswith(needs_room)}
    assert len(must_fail) == 5
    assert not refused_with(must_fail, "No space left on device"), must_fail
    assert not refused_with({c: a for c, a in found.items() if a[0] >= 500}, "No space"), found
    assert session_files(store) == files  # no empty file of the session that failed
    empty(store)
    again = chat.client.post(f"{API}/sessions", json={"title": "New"}, headers=chat.user.headers)
    assert again.status_code == 201


def test_an_empty_session_file_is_no_session(chat: Chat, store: Path) -> None:
    """A 0-byte file, as an older version left on a full disk: 404 (and removed), never
    listed, never indexed; the other sessions are untouched."""
    kept = chat.new_session()
    hollow = "20260101T000000-0e0e0e0e"
    path = store / "users" / chat.user.user_id / "sessions" / f"{hollow}.jsonl"
    path.touch()
    with chat.rt.db.session() as db:
        sync.drop(db)  # rebuilt on the next listing, from the files
    listed = chat.client.get(f"{API}/sessions", headers=chat.user.headers).get_json()["items"]
    assert [item["id"] for item in listed] == [kept]
    report = sync.rebuild(chat.rt.db, chat.rt.store)
    assert not report.failed
    for method, suffix in (("POST", "/turns"), ("GET", ""), ("DELETE", "?purge=true")):
        response = chat.client.open(
            f"{API}/sessions/{hollow}{suffix}",
            method=method,
            headers=chat.user.headers,
            json={"content": "hi"} if method == "POST" else None,
        )
        assert response.status_code == 404, (method, response.get_json())
    assert not path.exists()  # removed as what it is: nothing
    assert chat.client.get(f"{API}/sessions/{kept}", headers=chat.user.headers).status_code == 200
