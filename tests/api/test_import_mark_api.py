"""The session list says how a chat came, so the web client can mark it (issue 42, item 6):
`forked_from` names a fork's original, `imported` says an import came from a bundle or from a
shared link; a chat made here has neither."""

from __future__ import annotations

from typing import Any

from shared.index import sync
from tests.api.conftest import API, Chat
from tests.conftest import create_account


def listed(chat: Chat, headers: dict[str, str]) -> dict[str, dict[str, Any]]:
    items = chat.client.get(f"{API}/sessions", headers=headers).get_json()["items"]
    return {item["id"]: item for item in items}


def a_chat(chat: Chat, title: str) -> str:
    session_id = chat.new_session()
    chat.llm.script("An answer.")
    assert chat.turn(session_id, content="A question").status_code == 200
    chat.client.patch(
        f"{API}/sessions/{session_id}", json={"title": title}, headers=chat.user.headers
    )
    return session_id


def test_forks_and_imports_are_told_apart_in_the_list(chat: Chat) -> None:
    original = a_chat(chat, "Garden plans")
    fork = chat.client.post(f"{API}/sessions/{original}/fork", json={}, headers=chat.user.headers)
    assert fork.status_code == 201, fork.get_data(as_text=True)
    bundle = chat.client.get(
        f"{API}/sessions/{original}/export?format=zip", headers=chat.user.headers
    )
    made = chat.client.post(
        f"{API}/sessions/import",
        data=bundle.data,
        content_type="application/zip",
        headers=chat.user.headers,
    )
    assert made.status_code == 201, made.get_data(as_text=True)
    imported = made.get_json()["session"]
    assert imported["imported"] == "bundle"

    rows = listed(chat, chat.user.headers)
    assert (rows[original]["forked_from"], rows[original]["imported"]) == (None, None)
    assert (
        rows[fork.get_json()["id"]]["forked_from"],
        rows[fork.get_json()["id"]]["imported"],
    ) == (
        original,
        None,
    )
    assert (rows[imported["id"]]["forked_from"], rows[imported["id"]]["imported"]) == (
        None,
        "bundle",
    )
    one = chat.client.get(f"{API}/sessions/{imported['id']}", headers=chat.user.headers)
    assert one.get_json()["imported"] == "bundle"

    # The mark comes from the file: an index rebuilt from the files has it too.
    with chat.rt.db.session() as db:
        sync.drop(db)
    assert listed(chat, chat.user.headers)[imported["id"]]["imported"] == "bundle"


def test_a_shared_link_forked_is_marked_as_shared(chat: Chat) -> None:
    original = a_chat(chat, "Trip notes")
    link = chat.client.post(f"{API}/sessions/{original}/share", headers=chat.user.headers)
    assert link.status_code == 201, link.get_data(as_text=True)
    teammate = create_account(chat.rt, "teammate")
    forked = chat.client.post(
        f"{API}/shared/{link.get_json()['token']}/fork", headers=teammate.headers
    )
    assert forked.status_code == 201, forked.get_data(as_text=True)
    row = listed(chat, teammate.headers)[forked.get_json()["id"]]
    assert (row["title"], row["imported"], row["forked_from"]) == ("Trip notes", "shared", None)
