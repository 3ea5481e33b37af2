"""Empty sessions are capped per user (issue 38, item 8): the probe made 600 sessions with no
message in 2.3 s. A user holding EMPTY_SESSIONS_PER_USER of them is refused the next one (429
`too_many_empty_sessions`) until one gets a message or goes; clients, which send a first
message right after making a session, never meet the cap."""

from __future__ import annotations

from collections.abc import Callable

from tests.api.conftest import API, Chat
from tests.conftest import create_account


def create(chat: Chat, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return chat.client.post(f"{API}/sessions", json={}, headers=headers or chat.user.headers)


def test_the_default_cap_stops_a_loop_of_empty_sessions(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat()
    made = [create(chat).status_code for _ in range(60)]
    assert made == [201] * 50 + [429] * 10


def test_a_user_at_the_cap_is_told_why_and_can_go_on(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(EMPTY_SESSIONS_PER_USER="3", EMPTY_SESSION_GRACE_SECONDS="600")
    ids = [create(chat).get_json()["id"] for _ in range(3)]
    refused = create(chat)
    assert refused.status_code == 429
    error = refused.get_json()["error"]
    assert error["code"] == "too_many_empty_sessions"
    assert "3 sessions with no message" in error["message"]
    assert "EMPTY_SESSIONS_PER_USER=3" in error["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 600
    listed = chat.client.get(f"{API}/sessions", headers=chat.user.headers).get_json()["items"]
    assert len(listed) == 3  # nothing was made

    # Another user has their own count.
    other = create_account(chat.rt, "other")
    assert create(chat, other.headers).status_code == 201

    # A message in one of them: that one is no longer empty, and a new one may be made.
    assert chat.turn(ids[0], content="hello").status_code == 200
    assert create(chat).status_code == 201
    assert create(chat).status_code == 429
    # Deleting one (to the trash, then for good) frees a place too.
    purged = chat.client.delete(f"{API}/sessions/{ids[1]}?purge=true", headers=chat.user.headers)
    assert purged.status_code in (200, 204), purged.get_data(as_text=True)
    assert create(chat).status_code == 201


def test_no_cap_when_set_to_zero(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(EMPTY_SESSIONS_PER_USER="0")
    assert all(create(chat).status_code == 201 for _ in range(60))
