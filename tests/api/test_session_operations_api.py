"""Rename, fork, clear and the trash, through the API."""

from __future__ import annotations

import json
from datetime import timedelta

from flask.testing import FlaskClient

from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.runtime import Runtime
from shared.sessions import lifecycle
from shared.sessions import service as session_service
from tests.api.conftest import Chat
from tests.conftest import Account
from tests.fake_llm import text

API = "/api/v1"


def new_session(client: FlaskClient, who: Account, **body: object) -> dict:
    response = client.post(f"{API}/sessions", json=body, headers=who.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def message(role: str, content: str, **extra: object) -> dict:
    record = {"type": "message", "id": new_message_id(), "role": role, "content": content}
    return record | {"created_at": isoformat(utcnow())} | extra


def say(rt: Runtime, who: Account, session_id: str, *records: dict) -> None:
    me = Principal(who.user_id, who.username, False, "web", "")
    session_service.append_records(rt, me, session_id, list(records))


def transcript(client: FlaskClient, who: Account, session_id: str) -> list[tuple[str, str]]:
    items = client.get(f"{API}/sessions/{session_id}/messages", headers=who.headers).get_json()
    return [(m["role"], m["content"]) for m in items["items"]]


def listed(client: FlaskClient, who: Account, query: str = "") -> list[str]:
    page = client.get(f"{API}/sessions{query}", headers=who.headers).get_json()
    return [item["id"] for item in page["items"]]


# -- rename ---------------------------------------------------------------------------------


def test_a_rename_is_final_even_a_rename_to_nothing(chat: Chat) -> None:
    """The truncate mode titles a session from its first message, unless it was renamed (to
    null: untitled for good); a blank title is refused as the slip it likely is."""
    renamed, untitled, plain = chat.new_session(), chat.new_session(), chat.new_session()
    headers = chat.user.headers
    chat.client.patch(f"{API}/sessions/{renamed}", json={"title": "My plan"}, headers=headers)
    chat.client.patch(f"{API}/sessions/{untitled}", json={"title": None}, headers=headers)
    slip = chat.client.patch(f"{API}/sessions/{plain}", json={"title": " "}, headers=headers)
    assert slip.status_code == 400  # seen before: a blank title was taken as "untitled"
    assert slip.get_json()["error"]["code"] == "empty_title"
    for session_id in (renamed, untitled, plain):
        chat.llm.script(text("sure"))
        assert chat.turn(session_id, content="write a haiku").status_code == 200

    def title(session_id: str) -> str | None:
        url = f"{API}/sessions/{session_id}"
        return chat.client.get(url, headers=headers).get_json()["title"]

    assert (title(renamed), title(untitled), title(plain)) == ("My plan", None, "write a haiku")
    state, _ = chat.rt.store.load(chat.user.user_id, renamed)
    assert state.title_locked
    assert not state.title_pending


# -- fork -----------------------------------------------------------------------------------


def test_a_fork_copies_messages_images_and_is_independent(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    original = new_session(client, alice, title="Risky idea")
    first, answer = message("user", "plan A"), message("assistant", "A is fine")
    say(rt, alice, original["id"], first, answer)
    images = rt.store.sidecar_dir(alice.user_id, original["id"])
    images.mkdir()
    (images / "cat.png").write_bytes(b"\x89PNG fake")
    rt.store.write_summary(alice.user_id, original["id"], {"covered_through": answer["id"]})

    response = client.post(f"{API}/sessions/{original['id']}/fork", json={}, headers=alice.headers)
    assert response.status_code == 201, response.get_json()
    fork = response.get_json()
    assert fork["id"] != original["id"]
    assert fork["forked_from"] == original["id"]
    assert (fork["title"], fork["message_count"], fork["pinned"]) == ("Risky idea (fork)", 2, False)
    assert transcript(client, alice, fork["id"]) == [("user", "plan A"), ("assistant", "A is fine")]
    assert listed(client, alice)[0] == fork["id"]  # a new session: at the top
    copied = rt.store.sidecar_dir(alice.user_id, fork["id"])
    assert (copied / "cat.png").read_bytes() == b"\x89PNG fake"
    assert rt.store.read_summary(alice.user_id, fork["id"]) == {"covered_through": answer["id"]}

    # Each goes its own way: new messages, a rename, then the original purged.
    say(rt, alice, fork["id"], message("user", "plan B"))
    say(rt, alice, original["id"], message("user", "plan C"))
    client.patch(f"{API}/sessions/{fork['id']}", json={"title": "B"}, headers=alice.headers)
    assert [c for _, c in transcript(client, alice, original["id"])] == [
        "plan A",
        "A is fine",
        "plan C",
    ]
    assert [c for _, c in transcript(client, alice, fork["id"])] == [
        "plan A",
        "A is fine",
        "plan B",
    ]
    url = f"{API}/sessions/{original['id']}?purge=true"
    assert client.delete(url, headers=alice.headers).status_code == 204
    assert (copied / "cat.png").exists()
    after = client.get(f"{API}/sessions/{fork['id']}", headers=alice.headers).get_json()
    assert (after["title"], after["message_count"]) == ("B", 3)


def test_a_fork_up_to_a_message_leaves_a_summary_that_no_longer_applies(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    session = new_session(client, alice, title="long")
    turns = [message("user", "one"), message("assistant", "1"), message("user", "two")]
    turns.append(message("assistant", "2"))
    say(rt, alice, session["id"], *turns)
    rt.store.write_summary(alice.user_id, session["id"], {"covered_through": turns[3]["id"]})
    url = f"{API}/sessions/{session['id']}/fork"
    body = {"message_id": turns[1]["id"], "title": "branch"}
    fork = client.post(url, json=body, headers=alice.headers).get_json()
    assert transcript(client, alice, fork["id"]) == [("user", "one"), ("assistant", "1")]
    assert fork["title"] == "branch"
    assert rt.store.read_summary(alice.user_id, fork["id"]) is None

    call = message("assistant", "", tool_calls=[{"id": "c1", "type": "function"}])
    say(rt, alice, session["id"], message("user", "three"), call)
    inside = client.post(url, json={"message_id": call["id"]}, headers=alice.headers)
    assert inside.status_code == 400
    assert inside.get_json()["error"]["code"] == "not_a_fork_point"
    unknown = client.post(url, json={"message_id": "nope"}, headers=alice.headers)
    assert unknown.status_code == 404


def test_another_users_session_cannot_be_forked_cleared_trashed_or_restored(
    client: FlaskClient, alice: Account, bob: Account, rt: Runtime
) -> None:
    secret = new_session(client, alice, title="mine")
    say(rt, alice, secret["id"], message("user", "secret"))
    url = f"{API}/sessions/{secret['id']}"
    for method, path in [
        ("post", "/fork"),
        ("post", "/clear"),
        ("post", "/restore"),
        ("delete", ""),
        ("delete", "?purge=true"),
    ]:
        response = getattr(client, method)(url + path, json={}, headers=bob.headers)
        assert response.status_code == 404, (method, path)
    assert transcript(client, alice, secret["id"]) == [("user", "secret")]
    assert listed(client, bob) == []
    assert listed(client, alice) == [secret["id"]]


# -- clear ----------------------------------------------------------------------------------


def test_clear_wipes_the_history_and_keeps_id_title_pin_and_folder(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    folder = client.post(f"{API}/folders", json={"name": "Work"}, headers=alice.headers)
    folder_id = folder.get_json()["id"]
    session = new_session(client, alice, title="Keep me", folder_id=folder_id)
    other = new_session(client, alice, title="other")
    url = f"{API}/sessions/{session['id']}"
    client.patch(url, json={"pinned": True}, headers=alice.headers)
    say(rt, alice, session["id"], message("user", "old words"), message("assistant", "ok"))
    rt.store.write_summary(alice.user_id, session["id"], {"covered_through": "x"})

    response = client.post(f"{url}/clear", headers=alice.headers)
    assert response.status_code == 200, response.get_json()
    cleared = response.get_json()
    assert (cleared["id"], cleared["title"], cleared["pinned"]) == (session["id"], "Keep me", True)
    assert (cleared["folder_id"], cleared["message_count"]) == (folder_id, 0)
    assert transcript(client, alice, session["id"]) == []
    assert not rt.store.sidecar_dir(alice.user_id, session["id"]).exists()
    assert listed(client, alice) == [session["id"], other["id"]]
    records = rt.store.path(alice.user_id, session["id"]).read_text().splitlines()
    assert len(records) == 2
    assert "old words" not in "".join(records)

    # The session goes on; the empty-session sweep leaves a cleared session alone.
    say(rt, alice, session["id"], message("user", "fresh start"))
    assert transcript(client, alice, session["id"]) == [("user", "fresh start")]
    client.post(f"{url}/clear", headers=alice.headers)
    rt.settings = rt.settings.with_changes(empty_session_grace_seconds=0)
    assert lifecycle.sweep_empty_sessions(rt) == 1  # `other` never had a message
    assert listed(client, alice) == [session["id"]]


def test_an_append_waiting_for_a_clear_lands_in_the_cleared_file(
    rt: Runtime, alice: Account
) -> None:
    me = Principal(alice.user_id, alice.username, False, "web", "")
    session_id = session_service.create_session(rt, me, rt.memory, title="t").id
    session_service.append_records(rt, me, session_id, [message("user", "before")])
    late = message("user", "after")

    def cleared_meanwhile(records: list[dict]) -> list[dict]:
        import threading

        writer = threading.Thread(target=rt.store.append, args=(me.user_id, session_id, [late]))
        writer.start()  # blocks on the file's lock, held by this rewrite
        writer.join(0.2)
        assert writer.is_alive()
        cleared_meanwhile.writer = writer  # type: ignore[attr-defined]
        return records[:1]

    rt.store.rewrite(me.user_id, session_id, cleared_meanwhile)
    cleared_meanwhile.writer.join(5)  # type: ignore[attr-defined]
    state, _ = rt.store.load(me.user_id, session_id)
    assert [m["content"] for m in state.messages] == ["after"]


# -- the trash ------------------------------------------------------------------------------


def test_delete_moves_to_the_trash_and_restore_brings_it_back_in_place(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    older = new_session(client, alice, title="older")
    doomed = new_session(client, alice, title="doomed")
    newer = new_session(client, alice, title="newer")
    say(rt, alice, doomed["id"], message("user", "platypus notes"))
    order = listed(client, alice)
    url = f"{API}/sessions/{doomed['id']}"

    assert client.delete(url, headers=alice.headers).status_code == 204
    assert listed(client, alice) == [newer["id"], older["id"]]
    trash = client.get(f"{API}/sessions?trash=true", headers=alice.headers).get_json()["items"]
    assert [item["id"] for item in trash] == [doomed["id"]]
    assert trash[0]["deleted_at"]
    assert client.get(url, headers=alice.headers).get_json()["deleted_at"] == trash[0]["deleted_at"]
    assert listed(client, alice, "?q=platypus") == []
    assert listed(client, alice, "?q=platypus&trash=true") == [doomed["id"]]
    refused = client.patch(url, json={"pinned": True}, headers=alice.headers)
    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "session_in_trash"
    assert client.post(f"{url}/fork", json={}, headers=alice.headers).status_code == 409
    assert client.post(f"{url}/clear", headers=alice.headers).status_code == 409
    assert client.delete(url, headers=alice.headers).status_code == 204  # again: no change

    restored = client.post(f"{url}/restore", headers=alice.headers)
    assert restored.status_code == 200
    assert restored.get_json()["deleted_at"] is None
    assert listed(client, alice) == order
    assert listed(client, alice, "?q=platypus") == [doomed["id"]]
    assert client.post(f"{url}/restore", headers=alice.headers).status_code == 200


def test_a_turn_in_a_trashed_session_is_refused_and_saves_nothing(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.client.delete(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    response = chat.turn(session_id, content="hello?")
    assert response.status_code == 409
    assert response.get_json()["error"]["code"] == "session_in_trash"
    assert chat.rt.store.load(chat.user.user_id, session_id)[0].messages == []


def test_the_sweep_purges_after_30_days_what_is_still_in_the_trash(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    kept, restored, purged = (new_session(client, alice, title=t) for t in "abc")
    say(rt, alice, purged["id"], message("user", "wombat facts"))
    for item in (restored, purged):
        client.delete(f"{API}/sessions/{item['id']}", headers=alice.headers)
    client.post(f"{API}/sessions/{restored['id']}/restore", headers=alice.headers)

    assert lifecycle.purge_trash(rt, now=utcnow() + timedelta(days=29)) == 0
    assert lifecycle.purge_trash(rt, now=utcnow() + timedelta(days=30, minutes=1)) == 1
    assert client.get(f"{API}/sessions/{purged['id']}", headers=alice.headers).status_code == 404
    assert not rt.store.path(alice.user_id, purged["id"]).exists()
    assert listed(client, alice, "?trash=true") == []
    assert listed(client, alice) == [restored["id"], kept["id"]]
    with rt.db.session() as db:
        from shared.db.orm import SessionText

        left = db.query(SessionText).filter(SessionText.session_id == purged["id"]).count()
    assert left == 0  # its text is gone from the search index


def test_purge_removes_at_once_with_the_sessions_files(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    session = new_session(client, alice, title="gone")
    folder = rt.store.sidecar_dir(alice.user_id, session["id"])
    folder.mkdir()
    (folder / "image.png").write_bytes(b"x")
    url = f"{API}/sessions/{session['id']}"
    assert client.delete(f"{url}?purge=yes-please", headers=alice.headers).status_code == 422
    assert client.delete(f"{url}?purge=true", headers=alice.headers).status_code == 204
    assert not folder.exists()
    assert not rt.store.path(alice.user_id, session["id"]).exists()
    assert listed(client, alice, "?trash=true") == []
    body = client.post(f"{url}/restore", headers=alice.headers).get_json()
    assert body["error"]["code"] == "not_found"
    assert json.dumps(body)  # a JSON error, like every other
