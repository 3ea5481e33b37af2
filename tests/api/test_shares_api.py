"""A read-only link to a chat for a teammate (issue 42, item 5): the owner shares a snapshot,
another signed-in user of the server reads it and forks it into their own chats; a stranger
without sign-in, a revoked link and a deleted session's link read nothing."""

from __future__ import annotations

from shared.db.orm import SessionShare
from shared.index import sync
from shared.llm.tools import Tool
from tests.api.conftest import API, Chat
from tests.conftest import Account, create_account
from tests.fake_llm import tool_call, tool_calls


def _shared_chat(chat: Chat) -> tuple[str, dict]:
    """A session of two turns, the first with a tool step, made by an owner with a profile in
    memory, and its new link."""
    profile = {"content": "Alice keeps bees."}
    saved = chat.client.put(f"{API}/memory/user", json=profile, headers=chat.user.headers)
    assert saved.status_code == 200, saved.get_data(as_text=True)
    chat.rt.tools.register(
        Tool("vault", "Read the vault", {"type": "object"}, lambda _c, _a: "owner-only secret")
    )
    session_id = chat.new_session()
    chat.llm.script(tool_calls(tool_call("vault", {}, id="call_1")), "Paris, as you said.")
    assert chat.turn(session_id, content="Where did we meet?").status_code == 200
    chat.llm.script("Tuesday.")
    assert chat.turn(session_id, content="And when?").status_code == 200
    chat.client.patch(
        f"{API}/sessions/{session_id}", json={"title": "Trip notes"}, headers=chat.user.headers
    )
    made = chat.client.post(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert made.status_code == 201, made.get_data(as_text=True)
    return session_id, made.get_json()


def _read(chat: Chat, token: str, reader: Account | None) -> tuple[int, dict]:
    headers = reader.headers if reader else {}
    response = chat.client.get(f"{API}/shared/{token}", headers=headers)
    return response.status_code, response.get_json()


def test_a_teammate_reads_the_snapshot_and_a_stranger_is_asked_to_sign_in(chat: Chat) -> None:
    _, link = _shared_chat(chat)
    token = link["token"]
    assert link["url"].endswith(f"/shared/{token}")
    assert len(token) == 32
    assert link["created_at"]
    teammate = create_account(chat.rt, "teammate")

    status, body = _read(chat, token, teammate)
    assert status == 200
    assert body["title"] == "Trip notes"
    assert body["owner"] == chat.user.username
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "Where did we meet?"),
        ("assistant", "Paris, as you said."),
        ("user", "And when?"),
        ("assistant", "Tuesday."),
    ]  # the tool step and its result (the owner's tool's output) are not shown
    assert "owner-only secret" not in str(body)
    assert all(m["created_at"] for m in body["messages"])

    assert _read(chat, token, None)[0] == 401
    assert _read(chat, "x" * 32, teammate)[0] == 404


def test_the_snapshot_keeps_what_was_said_when_it_was_shared(chat: Chat) -> None:
    session_id, link = _shared_chat(chat)
    chat.llm.script("Later answer.")
    assert chat.turn(session_id, content="A later question").status_code == 200
    chat.client.patch(
        f"{API}/sessions/{session_id}", json={"title": "Renamed"}, headers=chat.user.headers
    )

    _, body = _read(chat, link["token"], create_account(chat.rt, "teammate"))
    assert body["title"] == "Trip notes"
    assert len(body["messages"]) == 4
    assert "A later question" not in str(body)
    again = chat.client.post(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert again.status_code == 200  # sharing again answers the same link
    assert again.get_json()["token"] == link["token"]
    shown = chat.client.get(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert shown.status_code == 200
    assert shown.get_json()["url"] == link["url"]


def test_a_revoked_link_and_a_deleted_sessions_link_answer_404(chat: Chat) -> None:
    teammate = create_account(chat.rt, "teammate")
    session_id, link = _shared_chat(chat)
    revoked = chat.client.delete(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert revoked.status_code == 204
    assert _read(chat, link["token"], teammate)[0] == 404
    none = chat.client.get(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert none.status_code == 404

    fresh = chat.client.post(f"{API}/sessions/{session_id}/share", headers=chat.user.headers)
    assert fresh.status_code == 201
    assert fresh.get_json()["token"] != link["token"]
    assert _read(chat, fresh.get_json()["token"], teammate)[0] == 200
    chat.client.delete(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    assert _read(chat, fresh.get_json()["token"], teammate)[0] == 404
    chat.client.post(f"{API}/sessions/{session_id}/restore", headers=chat.user.headers)
    assert _read(chat, fresh.get_json()["token"], teammate)[0] == 404  # revoked for good


def test_only_the_owner_shares_and_a_temporary_chat_is_not_shared(chat: Chat) -> None:
    session_id, link = _shared_chat(chat)
    other = create_account(chat.rt, "other")
    for method in ("post", "get", "delete"):
        answer = getattr(chat.client, method)(
            f"{API}/sessions/{session_id}/share", headers=other.headers
        )
        assert answer.status_code == 404, method
    assert _read(chat, link["token"], other)[0] == 200  # the other's DELETE revoked nothing

    temporary = chat.client.post(
        f"{API}/sessions", json={"temporary": True}, headers=chat.user.headers
    ).get_json()["id"]
    refused = chat.client.post(f"{API}/sessions/{temporary}/share", headers=chat.user.headers)
    assert refused.status_code == 400
    assert refused.get_json()["error"]["code"] == "temporary_session"


def test_fork_copies_the_snapshot_into_the_readers_own_chats(chat: Chat) -> None:
    _, link = _shared_chat(chat)
    teammate = create_account(chat.rt, "teammate")
    forked = chat.client.post(f"{API}/shared/{link['token']}/fork", headers=teammate.headers)
    assert forked.status_code == 201, forked.get_data(as_text=True)
    new = forked.get_json()
    assert new["title"] == "Trip notes"
    assert new["message_count"] == 4

    mine = chat.client.get(f"{API}/sessions", headers=teammate.headers).get_json()["items"]
    assert [s["id"] for s in mine] == [new["id"]]
    items = chat.client.get(
        f"{API}/sessions/{new['id']}/messages", headers=teammate.headers
    ).get_json()["items"]
    assert [m["content"] for m in items][-1] == "Tuesday."
    header = chat.rt.store.load(teammate.user_id, new["id"])[0].meta
    assert header["imported_from"]["source"] == "shared"
    assert "Alice keeps bees" not in str(header)  # the owner's memory stays theirs
    chat.llm.script("Sure.")
    follow = chat.client.post(
        f"{API}/sessions/{new['id']}/turns", json={"content": "Go on"}, headers=teammate.headers
    )
    assert follow.status_code == 200  # the copy is the teammate's own chat
    assert chat.client.post(f"{API}/shared/{link['token']}/fork").status_code == 401


def test_deleting_the_owners_account_removes_the_share(chat: Chat) -> None:
    _, link = _shared_chat(chat)
    teammate = create_account(chat.rt, "teammate")
    admin = create_account(chat.rt, "admin", admin=True)
    gone = chat.client.delete(f"{API}/users/{chat.user.user_id}", headers=admin.headers)
    assert gone.status_code == 204
    assert _read(chat, link["token"], teammate)[0] == 404
    with chat.rt.db.session() as db:
        assert db.query(SessionShare).count() == 0


def test_a_link_outlives_a_dropped_index(chat: Chat) -> None:
    """The index is a cache: dropped (rebuilt at the owner's next listing), no link breaks."""
    _, link = _shared_chat(chat)
    with chat.rt.db.session() as db:
        sync.drop(db)
    status, body = _read(chat, link["token"], create_account(chat.rt, "teammate"))
    assert status == 200
    assert body["title"] == "Trip notes"
