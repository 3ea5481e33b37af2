"""Browser sign-in: the eonyx_session cookie (HttpOnly, SameSite=Strict, Path=/; over https
Secure and named __Host-eonyx_session), its CSRF token, revocation on sign-out, and bearer
tokens left as they were."""

from __future__ import annotations

import io
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from shared.accounts import people
from shared.runtime import Runtime
from tests.api.conftest import API, Chat
from tests.api.websockets import Refused, connect, live
from tests.conftest import Account, create_account, make_settings

COOKIE = "eonyx_session"


def sign_in(
    client: FlaskClient, username: str = "alice", password: str = "correct horse", **kw: Any
) -> TestResponse:
    return client.post(
        f"{API}/auth/session", json={"username": username, "password": password}, **kw
    )


def cookie_header(response: TestResponse) -> str:
    [header] = [v for v in response.headers.getlist("Set-Cookie") if v.startswith(COOKIE + "=")]
    return header


def session_count(client: FlaskClient, account: Account) -> int:
    return len(client.get(f"{API}/sessions", headers=account.headers).get_json()["items"])


def test_sign_in_sets_an_httponly_strict_cookie_and_returns_the_user_and_csrf_token(
    client: FlaskClient, alice: Account
) -> None:
    response = sign_in(client)
    assert response.status_code == 200
    body = response.get_json()
    assert body["user"] == {"id": alice.user_id, "username": "alice", "is_admin": False}
    assert len(body["csrf_token"]) >= 32
    attributes = [part.strip() for part in cookie_header(response).split(";")]
    assert "HttpOnly" in attributes
    assert "SameSite=Strict" in attributes
    assert "Path=/" in attributes
    assert "Secure" not in attributes  # plain http
    assert f"Max-Age={14 * 24 * 3600}" in attributes
    value = client.get_cookie(COOKIE)
    assert value is not None
    assert value.value not in body["csrf_token"]

    # a reloaded page asks again and gets the same sign-in and CSRF token
    again = client.get(f"{API}/auth/session")
    assert again.status_code == 200
    assert again.get_json() == body
    # the cookie alone authenticates the ordinary API
    me = client.get(f"{API}/users/me")
    assert me.status_code == 200
    assert me.get_json()["username"] == "alice"


HTTPS = "https://eonyx.example"
HOST_COOKIE = "__Host-eonyx_session"


def test_over_https_the_cookie_is_a_host_cookie(client: FlaskClient, alice: Account) -> None:
    """`__Host-`: Secure, Path=/ and no Domain, which browsers require of that prefix, so no
    other origin of the host can set one. Over plain http (above) the name stays plain."""
    response = sign_in(client, base_url=HTTPS)
    assert response.status_code == 200
    [header] = response.headers.getlist("Set-Cookie")
    attributes = [part.strip() for part in header.split(";")]
    assert attributes[0].startswith(HOST_COOKIE + "=")
    assert {"Secure", "HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    assert not [a for a in attributes if a.lower().startswith("domain")]
    csrf = response.get_json()["csrf_token"]
    assert client.get(f"{API}/users/me", base_url=HTTPS).get_json()["username"] == "alice"
    made = client.post(f"{API}/sessions", json={}, headers={"X-CSRF-Token": csrf}, base_url=HTTPS)
    assert made.status_code == 201
    assert made.get_json()["source"] == "web"

    signed_out = client.delete(
        f"{API}/auth/session", headers={"X-CSRF-Token": csrf}, base_url=HTTPS
    )
    assert signed_out.status_code == 204
    [cleared] = signed_out.headers.getlist("Set-Cookie")
    assert cleared.startswith(HOST_COOKIE + "=;")
    assert "Max-Age=0" in cleared
    assert client.get(f"{API}/users/me", base_url=HTTPS).status_code == 401


def test_over_https_a_cookie_tossed_without_the_prefix_signs_nobody_in(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    """A page on another port of the host can set `eonyx_session` (cookies ignore ports),
    even with `path=/api/v1` so it goes first: over https it is not the session cookie, so
    the victim is not signed in to the attacker's account, and their own sign-in wins."""
    create_account(rt, "mallory")
    attacker = client.application.test_client()
    sign_in(attacker, username="mallory", password="correct horse", base_url=HTTPS)
    planted = attacker.get_cookie(HOST_COOKIE, domain="eonyx.example")
    assert planted is not None
    victim = client.application.test_client()
    victim.set_cookie(COOKIE, planted.value, domain="eonyx.example", path="/api/v1")
    assert victim.get(f"{API}/users/me", base_url=HTTPS).status_code == 401
    assert victim.get(f"{API}/auth/session", base_url=HTTPS).status_code == 401
    sign_in(victim, base_url=HTTPS)
    assert victim.get(f"{API}/users/me", base_url=HTTPS).get_json()["username"] == "alice"


def test_a_wrong_password_is_a_401_a_page_can_show_and_sets_no_cookie(
    client: FlaskClient, alice: Account
) -> None:
    response = sign_in(client, password="wrong horse")
    assert response.status_code == 401
    assert response.get_json()["error"] == {
        "code": "bad_credentials",
        "message": "wrong username or password",
    }
    assert not response.headers.getlist("Set-Cookie")
    assert client.get(f"{API}/auth/session").status_code == 401
    assert client.get(f"{API}/users/me").status_code == 401


def test_browser_sign_in_is_throttled_with_the_token_login(
    client: FlaskClient, alice: Account
) -> None:
    for _ in range(people.ACCOUNT_POLICY.free):
        assert sign_in(client, password="guess").status_code == 401
    client.post(f"{API}/auth/login", json={"username": "alice", "password": "guess"})
    refused = sign_in(client)  # the right password waits too
    assert refused.status_code == 429
    assert refused.get_json()["error"]["code"] == "too_many_logins"
    assert "Retry-After" in refused.headers


def test_without_a_sign_in_get_session_is_401(client: FlaskClient, alice: Account) -> None:
    response = client.get(f"{API}/auth/session")
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "not_signed_in"
    # a bearer token is not a browser sign-in: there is no CSRF token to hand out
    assert client.get(f"{API}/auth/session", headers=alice.headers).status_code == 401


def test_a_cookie_request_that_changes_state_needs_the_csrf_header(
    client: FlaskClient, alice: Account
) -> None:
    csrf = sign_in(client).get_json()["csrf_token"]
    for headers in ({}, {"X-CSRF-Token": "x" * len(csrf)}, {"X-CSRF-Token": ""}):
        refused = client.post(f"{API}/sessions", json={"title": "sneaky"}, headers=headers)
        assert refused.status_code == 403
        assert refused.get_json()["error"]["code"] == "csrf_failed"
        assert "X-CSRF-Token" in refused.get_json()["error"]["message"]
    assert session_count(client, alice) == 0  # nothing was made

    made = client.post(f"{API}/sessions", json={"title": "mine"}, headers={"X-CSRF-Token": csrf})
    assert made.status_code == 201
    session_id = made.get_json()["id"]
    for method in ("patch", "delete"):
        refused = getattr(client, method)(f"{API}/sessions/{session_id}", json={"title": "x"})
        assert refused.status_code == 403, method
    listed = client.get(f"{API}/sessions").get_json()["items"]
    assert [(s["id"], s["title"], s["source"]) for s in listed] == [(session_id, "mine", "web")]
    before = client.get(f"{API}/memory/user").get_json()
    assert client.put(f"{API}/memory/user", json={"content": "- x\n"}).status_code == 403
    assert client.get(f"{API}/memory/user").get_json() == before


def test_another_sign_ins_csrf_token_does_not_pass(client: FlaskClient, rt: Runtime) -> None:
    create_account(rt, "alice")
    other = sign_in(client.application.test_client()).get_json()["csrf_token"]
    sign_in(client)
    refused = client.post(f"{API}/sessions", json={}, headers={"X-CSRF-Token": other})
    assert refused.status_code == 403


def test_bearer_requests_need_no_csrf_header_even_with_the_cookie_present(
    client: FlaskClient, alice: Account
) -> None:
    sign_in(client)
    made = client.post(f"{API}/sessions", json={}, headers=alice.headers)
    assert made.status_code == 201
    bare = client.application.test_client()
    assert bare.post(f"{API}/sessions", json={}, headers=alice.headers).status_code == 201


def test_the_cookie_and_bearer_tokens_do_not_stand_in_for_each_other(
    client: FlaskClient, alice: Account
) -> None:
    sign_in(client)
    cookie = client.get_cookie(COOKIE)
    assert cookie is not None
    bare = client.application.test_client()
    as_bearer = bare.get(f"{API}/users/me", headers={"Authorization": f"Bearer {cookie.value}"})
    assert as_bearer.status_code == 401
    bare.set_cookie(COOKIE, alice.token)  # a bearer token planted as the cookie
    assert bare.get(f"{API}/users/me").status_code == 401


def test_sign_out_revokes_the_sign_in_and_clears_the_cookie(
    client: FlaskClient, alice: Account
) -> None:
    csrf = sign_in(client).get_json()["csrf_token"]
    cookie = client.get_cookie(COOKIE)
    assert cookie is not None
    assert client.delete(f"{API}/auth/session").status_code == 403  # no CSRF header
    assert client.get(f"{API}/auth/session").status_code == 200  # still signed in

    response = client.delete(f"{API}/auth/session", headers={"X-CSRF-Token": csrf})
    assert response.status_code == 204
    cleared = [part.strip() for part in cookie_header(response).split(";")]
    assert cleared[0] == f"{COOKIE}="
    assert "Max-Age=0" in cleared
    assert client.get_cookie(COOKIE) is None
    assert client.get(f"{API}/auth/session").status_code == 401
    # the old value, replayed, is refused: the sign-in ended on the server
    replay = client.application.test_client()
    replay.set_cookie(COOKIE, cookie.value)
    assert replay.get(f"{API}/users/me").status_code == 401
    # signing out again is harmless
    assert client.delete(f"{API}/auth/session").status_code == 204


def test_a_browser_sign_in_is_listed_and_revocable_like_other_tokens(
    client: FlaskClient, alice: Account
) -> None:
    sign_in(client)
    listed = client.get(f"{API}/tokens", headers=alice.headers).get_json()
    [browser] = [t for t in listed if t["source"] == "browser"]
    revoked = client.delete(f"{API}/tokens/{browser['id']}", headers=alice.headers)
    assert revoked.status_code == 204
    assert client.get(f"{API}/users/me").status_code == 401


def test_signing_in_again_ends_the_previous_sign_in(client: FlaskClient, alice: Account) -> None:
    sign_in(client)
    first = client.get_cookie(COOKIE)
    assert first is not None
    sign_in(client)
    replay = client.application.test_client()
    replay.set_cookie(COOKIE, first.value)
    assert replay.get(f"{API}/users/me").status_code == 401
    assert client.get(f"{API}/users/me").status_code == 200


@pytest.mark.usefixtures("backend")
def test_the_sign_in_lasts_web_session_ttl_hours(tmp_path, backend) -> None:  # type: ignore[no-untyped-def]
    from api.app import create_app
    from api.context import runtime_of

    app = create_app(make_settings(tmp_path / "data", backend, WEB_SESSION_TTL_HOURS="2"))
    try:
        runtime_of(app).db.migrate()
        create_account(runtime_of(app), "alice")
        response = sign_in(app.test_client())
        assert "Max-Age=7200" in [part.strip() for part in cookie_header(response).split(";")]
    finally:
        runtime_of(app).close()


def test_uploads_by_cookie_need_the_csrf_header_too(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.turn(session_id, content="hello")
    bundle = chat.client.get(f"{API}/sessions/{session_id}/export", headers=chat.user.headers).data
    browser = chat.app.test_client()
    csrf = sign_in(browser, chat.user.username).get_json()["csrf_token"]

    def upload(headers: dict[str, str]) -> TestResponse:
        return browser.post(
            f"{API}/sessions/import",
            data={"file": (io.BytesIO(bundle), "bundle.zip")},
            content_type="multipart/form-data",
            headers=headers,
        )

    assert upload({}).status_code == 403
    assert session_count(chat.client, chat.user) == 1
    assert upload({"X-CSRF-Token": csrf}).status_code == 201
    assert session_count(chat.client, chat.user) == 2


def test_the_events_socket_takes_the_cookie_from_this_servers_pages(chat: Chat) -> None:
    browser = chat.app.test_client()
    csrf = sign_in(browser, chat.user.username).get_json()["csrf_token"]
    cookie = browser.get_cookie(COOKIE)
    assert cookie is not None
    with live(chat.app) as url:
        origin = "http://" + url.split("/")[2]
        ws = connect(url, headers={"Cookie": f"{COOKIE}={cookie.value}", "Origin": origin})
        try:
            assert ws.next_json() == {"type": "ready"}
            saved = browser.put(
                f"{API}/memory/user", json={"content": "- hi\n"}, headers={"X-CSRF-Token": csrf}
            )
            assert saved.status_code == 200
            assert ws.next_json()["type"] == "memory.updated"
        finally:
            ws.hang_up()


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "http://localhost.evil.example", "null", "", "http://localhost:8080"],
)
def test_a_cookie_upgrade_from_another_origin_is_refused(
    client: FlaskClient, alice: Account, origin: str
) -> None:
    sign_in(client)
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13"}
    headers = upgrade | ({"Origin": origin} if origin else {})
    refused = client.get(f"{API}/events", headers=headers)
    assert refused.status_code == 403
    assert refused.get_json()["error"]["code"] == "bad_origin"


def test_a_cookie_upgrade_from_another_origin_never_opens(chat: Chat) -> None:
    browser = chat.app.test_client()
    sign_in(browser, chat.user.username)
    cookie = browser.get_cookie(COOKIE)
    assert cookie is not None
    with live(chat.app) as url:
        with pytest.raises(Refused) as refused:
            connect(url, headers={"Cookie": f"{COOKIE}={cookie.value}", "Origin": "http://a.test"})
        assert refused.value.status_code == 403
        # a bearer token is not a browser's ambient credential: no Origin rule for it
        ws = connect(f"{url}?token={chat.user.token}", headers={"Origin": "http://a.test"})
        try:
            assert ws.next_json() == {"type": "ready"}
        finally:
            ws.hang_up()
