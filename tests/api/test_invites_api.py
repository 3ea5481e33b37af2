"""Invites: an administrator makes a link, the person opens it, chooses a username and a
password and is signed in; a link works once and only until it expires; only administrators
make them; guessing links is throttled like logins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from shared.db.orm import Invite, User
from tests.api.conftest import API, Chat
from tests.conftest import Account, MovedClock, create_account

PASSWORD = "a fine long password"


@pytest.fixture
def root(chat: Chat) -> Account:
    return create_account(chat.rt, "root", admin=True)


def invite(chat: Chat, by: Account, **body: Any) -> dict[str, Any]:
    made = chat.client.post(f"{API}/invites", json=body, headers=by.headers)
    assert made.status_code == 201, made.get_json()
    return made.get_json()


def secret_of(url: str) -> str:
    return url.rsplit("/invite/", 1)[1]


def accept(browser: FlaskClient, url: str, username: str, password: str = PASSWORD):
    return browser.post(
        f"{API}/invites/{secret_of(url)}/accept",
        json={"username": username, "password": password},
    )


def error_code(response: Any) -> str:
    return response.get_json()["error"]["code"]


def test_an_invite_link_makes_an_account_and_signs_the_browser_in(
    chat: Chat, root: Account
) -> None:
    made = invite(chat, root)
    assert set(made) == {"id", "url", "expires_at"}
    assert made["url"].startswith("http://localhost/invite/")
    expires = datetime.fromisoformat(made["expires_at"])
    assert abs(expires - (datetime.now(UTC) + timedelta(days=7))) < timedelta(minutes=1)
    pending = chat.client.get(f"{API}/invites", headers=root.headers).get_json()
    assert [p["id"] for p in pending] == [made["id"]]
    # only the secret's hash is kept
    with chat.rt.db.session() as db:
        stored = db.get_one(Invite, made["id"])
        assert secret_of(made["url"]) not in stored.token_hash

    # the link is a page of the web client
    page = chat.app.test_client().get(made["url"].removeprefix("http://localhost"))
    assert page.status_code == 200
    assert b"/static/js/main.js" in page.data

    browser = chat.app.test_client()
    accepted = accept(browser, made["url"], "newcomer")
    assert accepted.status_code == 201, accepted.get_json()
    body = accepted.get_json()
    assert body["user"]["username"] == "newcomer"
    assert body["user"]["is_admin"] is False
    # signed in: the cookie works, its CSRF token too, as after POST /auth/session
    assert browser.get(f"{API}/auth/session").get_json()["user"]["username"] == "newcomer"
    assert browser.get(f"{API}/users/me").get_json()["username"] == "newcomer"
    made_session = browser.post(
        f"{API}/sessions", json={}, headers={"X-CSRF-Token": body["csrf_token"]}
    )
    assert made_session.status_code == 201
    # and the password chosen signs in anywhere
    login = chat.client.post(
        f"{API}/auth/login", json={"username": "newcomer", "password": PASSWORD}
    )
    assert login.status_code == 200

    # used: 410, and no longer pending
    again = accept(chat.app.test_client(), made["url"], "someone-else")
    assert again.status_code == 410
    assert error_code(again) == "invite_used"
    assert chat.client.get(f"{API}/invites", headers=root.headers).get_json() == []
    with chat.rt.db.session() as db:
        stored = db.get_one(Invite, made["id"])
        newcomer = db.scalar(select(User).where(User.username == "newcomer"))
        assert newcomer is not None
        assert stored.used_by == newcomer.id
        assert stored.used_at is not None


def test_an_expired_invite_is_gone(chat: Chat) -> None:
    root = create_account(chat.rt, "root", admin=True, api=True)  # a key: it does not expire
    made = invite(chat, root)
    chat.rt.clock = MovedClock(timedelta(days=7, minutes=1))
    expired = accept(chat.app.test_client(), made["url"], "late")
    assert expired.status_code == 410
    assert error_code(expired) == "invite_expired"
    assert "expired" in expired.get_json()["error"]["message"]
    assert chat.client.get(f"{API}/invites", headers=root.headers).get_json() == []


def test_invite_ttl_hours_sets_how_long_a_link_lasts(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(INVITE_TTL_HOURS="2", PUBLIC_URL="https://eonyx.example.com")
    root = create_account(chat.rt, "root", admin=True)
    made = invite(chat, root)
    assert made["url"].startswith("https://eonyx.example.com/invite/")
    expires = datetime.fromisoformat(made["expires_at"])
    assert abs(expires - (datetime.now(UTC) + timedelta(hours=2))) < timedelta(minutes=1)
    chat.rt.clock = MovedClock(timedelta(hours=2, seconds=5))
    assert accept(chat.app.test_client(), made["url"], "late").status_code == 410


def test_only_an_administrator_makes_lists_or_revokes_invites(chat: Chat, root: Account) -> None:
    user = chat.user
    made = invite(chat, root)
    refused = chat.client.post(f"{API}/invites", json={"is_admin": True}, headers=user.headers)
    assert refused.status_code == 403
    assert chat.client.get(f"{API}/invites", headers=user.headers).status_code == 403
    revoke = chat.client.delete(f"{API}/invites/{made['id']}", headers=user.headers)
    assert revoke.status_code == 403
    with chat.rt.db.session() as db:
        assert db.scalar(select(func.count()).select_from(Invite)) == 1


def test_a_revoked_invite_no_longer_works(chat: Chat, root: Account) -> None:
    made = invite(chat, root)
    assert (
        chat.client.delete(f"{API}/invites/{made['id']}", headers=root.headers).status_code == 204
    )
    gone = accept(chat.app.test_client(), made["url"], "newcomer")
    assert gone.status_code == 404
    assert error_code(gone) == "invite_not_found"


def test_an_admin_invite_makes_an_administrator(chat: Chat, root: Account) -> None:
    made = invite(chat, root, is_admin=True)
    browser = chat.app.test_client()
    accepted = accept(browser, made["url"], "deputy")
    assert accepted.status_code == 201
    assert accepted.get_json()["user"]["is_admin"] is True
    assert browser.get(f"{API}/users").status_code == 200


def test_a_taken_username_leaves_the_invite_usable(chat: Chat, root: Account) -> None:
    made = invite(chat, root)
    taken = accept(chat.app.test_client(), made["url"], chat.user.username.upper())
    assert taken.status_code == 409
    assert error_code(taken) == "user_exists"
    short = accept(chat.app.test_client(), made["url"], "newcomer", password="short")
    assert short.status_code == 422
    bad_name = accept(chat.app.test_client(), made["url"], "-no good-")
    assert bad_name.status_code == 422
    assert accept(chat.app.test_client(), made["url"], "newcomer").status_code == 201


def test_two_accepts_of_one_invite_at_once_make_one_account(chat: Chat, root: Account) -> None:
    made = invite(chat, root)
    start = threading.Barrier(2)
    answers: dict[str, int] = {}

    def run(name: str) -> None:
        browser = chat.app.test_client()
        start.wait()
        answers[name] = accept(browser, made["url"], name).status_code

    threads = [threading.Thread(target=run, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers.values()) == [201, 410]
    with chat.rt.db.session() as db:
        made_users = db.scalars(select(User.username).where(User.username.in_(answers)))
        assert len(list(made_users)) == 1


def test_guessing_invite_links_is_throttled_like_logins(chat: Chat, root: Account) -> None:
    made = invite(chat, root)
    browser = chat.app.test_client()
    answers = [
        browser.post(
            f"{API}/invites/{'x' * 40}{n:03d}/accept",
            json={"username": "guesser", "password": PASSWORD},
        )
        for n in range(31)
    ]
    assert {a.status_code for a in answers[:30]} == {404}
    blocked = accept(browser, made["url"], "guesser")
    assert blocked.status_code == 429
    assert int(blocked.headers["Retry-After"]) > 0
    assert error_code(blocked) == "too_many_logins"
