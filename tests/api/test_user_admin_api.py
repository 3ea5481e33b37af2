"""Accounts a team runs: an administrator lists, disables, enables and deletes users and sets
their passwords; a user changes their own; the last enabled administrator is kept; whatever
ends a credential ends it everywhere at once (tokens, browser sign-ins, open event sockets)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

import api.events
from shared.accounts import people
from shared.accounts.throttle import Policy
from shared.db.orm import (
    ApiResponse,
    ApiToken,
    DeviceUiState,
    Folder,
    IndexState,
    SessionBinding,
    SessionMove,
    SessionRow,
    SessionText,
    TeamsUserLink,
    User,
)
from shared.index import sync
from shared.integrations import bindings
from shared.integrations.teams import links
from tests.api.conftest import API, Chat
from tests.api.test_images_api import data_url, image
from tests.api.websockets import EventsClient, connect, live, publish_raw
from tests.conftest import Account, create_account
from tests.fake_llm import text

PASSWORD = "correct horse"
NEW_PASSWORD = "a much longer horse"
AAD = "00000000-0000-4000-8000-00000000abcd"


@pytest.fixture
def root(chat: Chat) -> Account:
    return create_account(chat.rt, "root", admin=True)


@pytest.fixture(autouse=True)
def no_periodic_rechecks(monkeypatch: pytest.MonkeyPatch) -> None:
    """An open socket would check its token again after 45 s anyway: here it never does by
    itself, so a socket that closes was closed by the announcement of the change."""
    monkeypatch.setattr(api.events, "RECHECK_SECONDS", 3600.0)


def login(client: FlaskClient, username: str, password: str = PASSWORD):
    return client.post(f"{API}/auth/login", json={"username": username, "password": password})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_key(chat: Chat, account: Account, name: str = "laptop") -> str:
    made = chat.client.post(f"{API}/tokens", json={"name": name}, headers=account.headers)
    assert made.status_code == 201
    return made.get_json()["token"]


def browser_of(chat: Chat, username: str, password: str = PASSWORD) -> FlaskClient:
    """A client holding a browser sign-in (the session cookie) of `username`."""
    browser = chat.app.test_client()
    signed_in = browser.post(
        f"{API}/auth/session", json={"username": username, "password": password}
    )
    assert signed_in.status_code == 200, signed_in.get_json()
    browser.environ_base["HTTP_X_CSRF_TOKEN"] = signed_in.get_json()["csrf_token"]
    return browser


def status(chat: Chat, token: str) -> int:
    return chat.client.get(f"{API}/sessions", headers=bearer(token)).status_code


def error_code(response: Any) -> str:
    return response.get_json()["error"]["code"]


def patch(chat: Chat, by: Account, user_id: str, **body: Any):
    return chat.client.patch(f"{API}/users/{user_id}", json=body, headers=by.headers)


def assert_cut_off(
    chat: Chat, key: str, browser: FlaskClient, socket: EventsClient, reason: str
) -> None:
    """The API key, the browser sign-in and the open socket of a user no longer work: the
    socket was told `reason` and closed."""
    assert status(chat, key) == 401
    assert browser.get(f"{API}/auth/session").status_code == 401
    assert browser.get(f"{API}/sessions").status_code == 401
    seen, code = socket.until_closed()
    assert code == api.events.POLICY_VIOLATION
    assert [m["error"]["code"] for m in seen] == [reason]


@pytest.fixture
def sockets(chat: Chat) -> Iterator[tuple[str, list[EventsClient]]]:
    """The app on a live server (its events socket's URL) and the sockets a test opens."""
    opened: list[EventsClient] = []
    with live(chat.app) as url:
        yield url, opened
        for ws in opened:
            ws.hang_up()


def open_socket(sockets: tuple[str, list[EventsClient]], token: str) -> EventsClient:
    url, opened = sockets
    ws = connect(f"{url}?token={token}")
    opened.append(ws)
    assert ws.next_json() == {"type": "ready"}
    return ws


def test_an_admin_lists_users_and_a_non_admin_can_do_none_of_it(chat: Chat, root: Account) -> None:
    alice = chat.user
    listed = chat.client.get(f"{API}/users", headers=root.headers)
    assert listed.status_code == 200
    users = {u["username"]: u for u in listed.get_json()}
    assert set(users) == {alice.username, "root"}
    assert users["root"]["is_admin"]
    assert not users[alice.username]["is_admin"]
    assert not users[alice.username]["disabled"]

    assert chat.client.get(f"{API}/users", headers=alice.headers).status_code == 403
    refused = patch(chat, alice, root.user_id, disabled=True)
    assert refused.status_code == 403
    assert error_code(refused) == "forbidden"
    assert patch(chat, alice, alice.user_id, is_admin=True).status_code == 403
    deleting = chat.client.delete(f"{API}/users/{root.user_id}", headers=alice.headers)
    assert deleting.status_code == 403
    assert status(chat, root.token) == 200  # nothing changed
    me = chat.client.get(f"{API}/users/me", headers=alice.headers).get_json()
    assert me["is_admin"] is False


def test_changing_your_password_ends_your_other_sign_ins_but_not_this_one(
    chat: Chat, sockets: tuple[str, list[EventsClient]]
) -> None:
    alice = chat.user
    key = api_key(chat, alice)
    browser = browser_of(chat, alice.username)
    other_socket = open_socket(sockets, key)
    own_socket = open_socket(sockets, alice.token)
    url = f"{API}/me/password"

    wrong = chat.client.put(
        url,
        json={"current_password": "not it", "new_password": NEW_PASSWORD},
        headers=alice.headers,
    )
    assert wrong.status_code == 403
    assert error_code(wrong) == "wrong_password"
    short = chat.client.put(
        url, json={"current_password": PASSWORD, "new_password": "short"}, headers=alice.headers
    )
    assert short.status_code == 422
    assert status(chat, key) == 200
    assert login(chat.client, alice.username).status_code == 200

    changed = chat.client.put(
        url,
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        headers=alice.headers,
    )
    assert changed.status_code == 200
    # the API key, the browser sign-in and the login made just above
    assert changed.get_json() == {"revoked_tokens": 3}

    assert login(chat.client, alice.username).status_code == 401
    assert login(chat.client, alice.username, NEW_PASSWORD).status_code == 200
    assert status(chat, alice.token) == 200  # the request's own token stays
    assert_cut_off(chat, key, browser, other_socket, "invalid_token")
    event = {"type": "session.title", "session_id": "s", "title": "still here"}
    publish_raw(chat.rt.redis, alice.user_id, event)
    assert own_socket.next_json() == event  # the socket of the request's token is still open


def test_a_browser_changes_its_password_and_stays_signed_in(chat: Chat) -> None:
    alice = chat.user
    browser = browser_of(chat, alice.username)
    changed = browser.put(
        f"{API}/me/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    )
    assert changed.status_code == 200
    assert browser.get(f"{API}/auth/session").status_code == 200
    assert status(chat, alice.token) == 401  # the login token was another sign-in


def test_wrong_current_passwords_are_throttled_like_failed_logins(
    chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Blocks long enough that the test never races their end.
    monkeypatch.setattr(people, "ACCOUNT_POLICY", Policy(free=5, window=900, base=600, ceiling=900))
    alice = chat.user
    body = {"current_password": "guess", "new_password": NEW_PASSWORD}
    answers = [
        chat.client.put(f"{API}/me/password", json=body, headers=alice.headers)
        for _ in range(people.ACCOUNT_POLICY.free + 2)
    ]
    assert [a.status_code for a in answers[: people.ACCOUNT_POLICY.free + 1]] == [403] * (
        people.ACCOUNT_POLICY.free + 1
    )
    blocked = answers[-1]
    assert blocked.status_code == 429
    assert error_code(blocked) == "too_many_logins"
    assert int(blocked.headers["Retry-After"]) >= 1
    # the account's logins wait too: guessing through a stolen token is no faster
    assert login(chat.client, alice.username).status_code == 429
    assert status(chat, alice.token) == 200


def test_a_disabled_user_is_cut_off_at_once_and_enabled_again(
    chat: Chat, root: Account, sockets: tuple[str, list[EventsClient]]
) -> None:
    alice = chat.user
    key = api_key(chat, alice)
    browser = browser_of(chat, alice.username)
    socket = open_socket(sockets, key)

    disabled = patch(chat, root, alice.user_id, disabled=True)
    assert disabled.status_code == 200
    assert disabled.get_json()["disabled"] is True

    refused = chat.client.get(f"{API}/sessions", headers=alice.headers)
    assert refused.status_code == 401
    assert error_code(refused) == "account_disabled"
    assert_cut_off(chat, key, browser, socket, "account_disabled")
    url, _ = sockets
    again, code = connect(f"{url}?token={key}").until_closed()
    assert code == api.events.POLICY_VIOLATION
    right_password = login(chat.client, alice.username)
    assert right_password.status_code == 403
    assert error_code(right_password) == "account_disabled"
    assert login(chat.client, alice.username, "wrong password").status_code == 401
    listed = chat.client.get(f"{API}/users", headers=root.headers).get_json()
    assert next(u for u in listed if u["id"] == alice.user_id)["disabled"] is True

    enabled = patch(chat, root, alice.user_id, disabled=False)
    assert enabled.status_code == 200
    assert enabled.get_json()["disabled"] is False
    assert status(chat, alice.token) == 200
    assert status(chat, key) == 200
    assert browser.get(f"{API}/auth/session").status_code == 200
    assert login(chat.client, alice.username).status_code == 200


def test_revoking_a_token_closes_its_socket_at_once(
    chat: Chat, sockets: tuple[str, list[EventsClient]]
) -> None:
    alice = chat.user
    key = api_key(chat, alice)
    socket, kept = open_socket(sockets, key), open_socket(sockets, alice.token)
    token_id = next(
        t["id"]
        for t in chat.client.get(f"{API}/tokens", headers=alice.headers).get_json()
        if t["name"] == "laptop"
    )
    assert chat.client.delete(f"{API}/tokens/{token_id}", headers=alice.headers).status_code == 204
    seen, code = socket.until_closed()
    assert code == api.events.POLICY_VIOLATION
    assert [m["error"]["code"] for m in seen] == ["invalid_token"]
    event = {"type": "memory.updated", "kind": "user"}
    publish_raw(chat.rt.redis, alice.user_id, event)
    assert kept.next_json() == event


def test_an_admin_sets_a_password_which_ends_the_users_sign_ins(chat: Chat, root: Account) -> None:
    alice = chat.user
    key = api_key(chat, alice)
    changed = patch(chat, root, alice.user_id, password=NEW_PASSWORD)
    assert changed.status_code == 200
    assert status(chat, alice.token) == 401
    assert status(chat, key) == 401
    assert login(chat.client, alice.username).status_code == 401
    assert login(chat.client, alice.username, NEW_PASSWORD).status_code == 200

    # an administrator setting their own password keeps the request's token
    assert patch(chat, root, root.user_id, password=NEW_PASSWORD).status_code == 200
    assert status(chat, root.token) == 200


def test_the_last_enabled_admin_cannot_be_demoted_disabled_or_deleted(
    chat: Chat, root: Account
) -> None:
    alice = chat.user
    for body in ({"disabled": True}, {"is_admin": False}):
        refused = patch(chat, root, root.user_id, **body)
        assert refused.status_code == 409
        assert error_code(refused) == "last_admin"
        assert "last enabled administrator" in refused.get_json()["error"]["message"]
    deleting = chat.client.delete(f"{API}/users/{root.user_id}", headers=root.headers)
    assert deleting.status_code == 409
    assert error_code(deleting) == "last_admin"

    # A disabled administrator does not count.
    other = create_account(chat.rt, "other-admin", admin=True)
    assert patch(chat, root, other.user_id, disabled=True).status_code == 200
    assert patch(chat, root, root.user_id, is_admin=False).status_code == 409

    # With another enabled administrator, either may go.
    assert patch(chat, root, alice.user_id, is_admin=True).get_json()["is_admin"] is True
    assert patch(chat, alice, root.user_id, is_admin=False).status_code == 200
    assert patch(chat, alice, alice.user_id, disabled=True).status_code == 409
    assert chat.client.get(f"{API}/users", headers=root.headers).status_code == 403
    with chat.rt.db.session() as db:
        admins = db.scalar(
            select(func.count()).where(User.is_admin.is_(True), User.disabled.is_(False))
        )
    assert admins == 1


def test_bad_changes_are_refused(chat: Chat, root: Account) -> None:
    alice = chat.user
    unknown = patch(chat, root, "0" * 32, disabled=True)
    assert unknown.status_code == 404
    assert error_code(unknown) == "user_not_found"
    assert patch(chat, root, "not-an-id", disabled=True).status_code == 404
    assert patch(chat, root, alice.user_id, username="mallory").status_code == 422
    assert patch(chat, root, alice.user_id, disabled="yes").status_code == 422
    assert patch(chat, root, alice.user_id, password="short").status_code == 422
    assert status(chat, alice.token) == 200


def test_deleting_a_user_removes_their_files_and_rows_and_logs_who_did_it(
    chat: Chat, root: Account, caplog: pytest.LogCaptureFixture
) -> None:
    alice = chat.user
    bob = create_account(chat.rt, "bob")
    bobs_session = chat.client.post(f"{API}/sessions", json={}, headers=bob.headers).get_json()
    headers = alice.headers
    session_id = chat.new_session()
    chat.llm.script(text("A blue square."))
    turn = chat.turn(session_id, content=[{"type": "text", "text": "What?"}, data_url(image())])
    assert turn.status_code == 200, turn.get_json()
    memory = chat.client.put(
        f"{API}/memory/user", json={"content": "- likes tea\n"}, headers=headers
    )
    assert memory.status_code == 200
    folder = chat.client.post(f"{API}/folders", json={"name": "work"}, headers=headers)
    assert folder.status_code == 201
    ui = chat.client.put(
        f"{API}/devices/phone/ui-state", json={"sections_collapsed": {}}, headers=headers
    )
    assert ui.status_code == 200, ui.get_json()
    key = api_key(chat, alice)
    with chat.rt.db.session() as db:
        links.link(db, alice.username, AAD)
    bindings.bind(chat.rt, alice.user_id, "teams", bindings.digest("c1"), session_id)
    user_dir = chat.rt.store.users_dir / alice.user_id
    assert (user_dir / "sessions" / f"{session_id}.jsonl").exists()
    assert (user_dir / ".agent" / "USER.md").exists()
    assert any((user_dir / "sessions" / session_id / "images").iterdir())
    tables = (
        ApiToken,
        Folder,
        DeviceUiState,
        TeamsUserLink,
        SessionBinding,
        ApiResponse,
        SessionRow,
        SessionText,
        SessionMove,
        IndexState,
    )

    def rows_of(user_id: str) -> dict[str, int]:
        with chat.rt.db.session() as db:
            return {
                table.__tablename__: db.scalar(
                    select(func.count()).select_from(table).where(table.user_id == user_id)
                )
                or 0
                for table in tables
            }

    before = rows_of(alice.user_id)
    for name in ("tokens", "folders", "device_ui_state", "teams_user_links", "session_bindings"):
        assert before[name] >= 1, name
    assert before["session_index"] == 1
    assert before["session_text"] >= 2

    with caplog.at_level(logging.WARNING, logger="shared.accounts"):
        deleted = chat.client.delete(f"{API}/users/{alice.user_id}", headers=root.headers)
    assert deleted.status_code == 204
    assert [r.getMessage() for r in caplog.records if "audit" in r.getMessage()] == [
        f"audit: user {alice.username} ({alice.user_id}) deleted by root ({root.user_id}), "
        "with their sessions, memory and files"
    ]
    assert not user_dir.exists()
    assert rows_of(alice.user_id) == dict.fromkeys(before, 0)
    with chat.rt.db.session() as db:
        assert db.get(User, alice.user_id) is None
        assert links.linked_user(db, AAD) is None
    assert status(chat, alice.token) == 401
    assert status(chat, key) == 401
    assert login(chat.client, alice.username).status_code == 401
    again = chat.client.delete(f"{API}/users/{alice.user_id}", headers=root.headers)
    assert again.status_code == 404
    assert patch(chat, root, alice.user_id, disabled=True).status_code == 404
    listed = chat.client.get(f"{API}/users", headers=root.headers).get_json()
    assert alice.user_id not in {u["id"] for u in listed}

    # An index rebuild finds nothing of hers; bob's session is untouched.
    sync.rebuild(chat.rt.db, chat.rt.store)
    assert rows_of(alice.user_id) == dict.fromkeys(before, 0)
    bobs = chat.client.get(f"{API}/sessions", headers=bob.headers).get_json()["items"]
    assert [s["id"] for s in bobs] == [bobs_session["id"]]


def test_a_reset_password_must_be_changed_before_anything_else(chat: Chat, root: Account) -> None:
    alice = chat.user
    temporary = "temporary horse"
    reset = patch(chat, root, alice.user_id, password=temporary, must_change_password=True)
    assert reset.status_code == 200
    assert reset.get_json()["must_change_password"] is True
    listed = {
        u["username"]: u for u in chat.client.get(f"{API}/users", headers=root.headers).get_json()
    }
    assert listed[alice.username]["must_change_password"] is True

    browser = chat.app.test_client()
    signed_in = browser.post(
        f"{API}/auth/session", json={"username": alice.username, "password": temporary}
    )
    assert signed_in.status_code == 200
    assert signed_in.get_json()["must_change_password"] is True
    browser.environ_base["HTTP_X_CSRF_TOKEN"] = signed_in.get_json()["csrf_token"]
    # a reloaded page hears it again
    assert browser.get(f"{API}/auth/session").get_json()["must_change_password"] is True
    for refused in (
        browser.get(f"{API}/sessions"),
        browser.get(f"{API}/users/me"),
        browser.post(f"{API}/sessions", json={}),
    ):
        assert refused.status_code == 403
        assert error_code(refused) == "password_change_required"
    token_login = login(chat.client, alice.username, temporary)
    assert token_login.get_json()["must_change_password"] is True
    assert status(chat, token_login.get_json()["token"]) == 403

    changed = browser.put(
        f"{API}/me/password",
        json={"current_password": temporary, "new_password": NEW_PASSWORD},
    )
    assert changed.status_code == 200
    assert browser.get(f"{API}/sessions").status_code == 200
    assert browser.get(f"{API}/auth/session").get_json()["must_change_password"] is False
    again = login(chat.client, alice.username, NEW_PASSWORD)
    assert again.get_json()["must_change_password"] is False
    assert status(chat, again.get_json()["token"]) == 200


def test_a_reset_password_user_may_still_sign_out(chat: Chat, root: Account) -> None:
    alice = chat.user
    patch(chat, root, alice.user_id, password="temporary horse", must_change_password=True)
    browser = browser_of(chat, alice.username, "temporary horse")
    assert browser.delete(f"{API}/auth/session").status_code == 204
    assert browser.get(f"{API}/auth/session").status_code == 401


def test_the_users_list_shows_each_users_last_activity(chat: Chat, root: Account) -> None:
    alice = chat.user
    quiet = create_account(chat.rt, "quiet")
    assert quiet.token  # a login token, never used
    assert chat.client.get(f"{API}/users/me", headers=alice.headers).status_code == 200
    listed = chat.client.get(f"{API}/users", headers=root.headers).get_json()
    active = {u["username"]: u["last_active_at"] for u in listed}
    assert active["quiet"] is None
    seen = datetime.fromisoformat(active[alice.username])
    assert abs(seen - datetime.now(UTC)) < timedelta(minutes=1)
    assert active["root"] is not None  # this very listing
