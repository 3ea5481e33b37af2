"""Single sign-on against a real OpenID provider on loopback (oidc-provider-mock, built on
Authlib): the browser's whole round trip driven with httpx, from Eonyx's redirect through the
provider's sign-in form to the callback and the session cookie."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask import Flask
from sqlalchemy import select
from werkzeug.serving import BaseWSGIServer, make_server

from api.app import create_app
from api.context import runtime_of
from shared.accounts import people
from shared.core.settings import SettingsError, load_settings
from shared.db.orm import Group, GroupMember, User, UserIdentity
from shared.integrations.teams import links
from shared.runtime import Runtime
from tests.api.conftest import RecordingJobs, _Quiet
from tests.conftest import Backend, create_account, make_settings
from tests.oidc_provider import person, provider_process

CALLBACK = "/api/v1/auth/oidc/callback"
CLIENT_ID = "eonyx-web"
ADMINS = "eonyx-admins"


@dataclass
class Sso:
    """Eonyx served on loopback, set up for single sign-on with the provider at `issuer`."""

    url: str
    issuer: str
    rt: Runtime

    def person(self, sub: str, **claims: Any) -> None:
        person(self.issuer, sub, **claims)

    def browser(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, follow_redirects=False, timeout=30)

    def to_callback(self, browser: httpx.Client, sub: str) -> tuple[str, dict[str, list[str]]]:
        """Start a sign-in in `browser` and sign in at the provider's form as `sub`: the
        callback URL the provider sends the browser to, and the authorization request's
        parameters."""
        start = browser.get("/api/v1/auth/oidc/login")
        assert start.status_code == 302, start.text
        authorize = start.headers["location"]
        params = parse_qs(urlsplit(authorize).query)
        form = httpx.get(authorize)
        assert form.status_code == 200
        assert 'name="sub"' in form.text  # the provider's sign-in form
        back = httpx.post(authorize, data={"sub": sub})
        assert back.status_code == 302, back.text
        return back.headers["location"], params

    def sign_in(self, sub: str, browser: httpx.Client | None = None) -> httpx.Response:
        browser = browser or self.browser()
        callback, _ = self.to_callback(browser, sub)
        return browser.get(callback)

    def user(self, username: str) -> User:
        with self.rt.db.session() as db:
            user = db.scalar(select(User).where(User.username == username))
            assert user is not None
            db.expunge(user)
            return user


@pytest.fixture
def make_sso(tmp_path: Path, backend: Backend) -> Iterator[Callable[..., Sso]]:
    stops: list[Callable[[], None]] = []

    def build(**env: str) -> Sso:
        provider = ExitStack()
        issuer = provider.enter_context(provider_process())
        apps: list[Flask] = []
        server: BaseWSGIServer = make_server(
            "127.0.0.1",
            0,
            lambda environ, respond: apps[0](environ, respond),
            threaded=True,
            request_handler=_Quiet,
        )
        url = f"http://127.0.0.1:{server.port}"
        settings = make_settings(
            tmp_path / f"data{len(stops)}",
            backend,
            PUBLIC_URL=url,
            OIDC_ISSUER=issuer,
            OIDC_CLIENT_ID=CLIENT_ID,
            OIDC_CLIENT_SECRET="the-client-secret",
            OIDC_ADMIN_GROUP=ADMINS,
            OIDC_PROVIDER_NAME="Example SSO",
            **env,
        )
        apps.append(create_app(settings, jobs_queue=RecordingJobs()))
        rt = runtime_of(apps[0])
        rt.db.migrate()
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
            rt.close()
            provider.close()

        stops.append(stop)
        return Sso(url, issuer, rt)

    yield build
    for stop in stops:
        stop()


@pytest.fixture
def sso(make_sso: Callable[..., Sso]) -> Sso:
    return make_sso()


def _no_session_cookie(response: httpx.Response) -> bool:
    return not any("eonyx_session=" in h for h in response.headers.get_list("set-cookie"))


def test_a_first_sign_in_makes_the_account_and_signs_the_browser_in(sso: Sso) -> None:
    sso.person("sub-alice", preferred_username="alice", email="alice@example.com")
    browser = sso.browser()
    callback, params = sso.to_callback(browser, "sub-alice")

    # The authorization request: code flow, state, nonce and PKCE S256, back to PUBLIC_URL.
    assert params["response_type"] == ["code"]
    assert params["client_id"] == [CLIENT_ID]
    assert params["redirect_uri"] == [sso.url + CALLBACK]
    assert params["code_challenge_method"] == ["S256"]
    assert len(params["code_challenge"][0]) == 43
    assert params["state"][0]
    assert params["nonce"][0]
    assert "openid" in params["scope"][0].split()
    assert callback.startswith(sso.url + CALLBACK + "?")

    done = browser.get(callback)
    assert done.status_code == 302, done.text
    assert done.headers["location"] == "/"
    me = browser.get("/api/v1/users/me")  # the session cookie, as a password sign-in's
    assert me.status_code == 200
    assert me.json()["username"] == "alice"
    assert me.json()["is_admin"] is False
    session = browser.get("/api/v1/auth/session").json()
    assert session["user"]["username"] == "alice"
    assert session["csrf_token"]
    with sso.rt.db.session() as db:
        identity = db.get_one(UserIdentity, (sso.issuer, "sub-alice"))
        assert identity.user_id == me.json()["id"]


def test_the_next_sign_in_is_the_same_account_and_a_namesake_gets_another(sso: Sso) -> None:
    sso.person("sub-alice", preferred_username="alice")
    first = sso.browser()
    assert sso.sign_in("sub-alice", first).status_code == 302
    second = sso.browser()
    assert sso.sign_in("sub-alice", second).status_code == 302
    assert second.get("/api/v1/users/me").json()["id"] == first.get("/api/v1/users/me").json()["id"]

    # Another person whose provider name is taken here: the email's local part is taken too.
    sso.person("sub-other", preferred_username="Alice", email="alice@elsewhere.example")
    other = sso.browser()
    assert sso.sign_in("sub-other", other).status_code == 302
    assert other.get("/api/v1/users/me").json()["username"] == "Alice-2"
    with sso.rt.db.session() as db:
        assert len(db.scalars(select(User)).all()) == 2


def test_the_admin_group_makes_an_administrator_and_leaving_it_demotes(sso: Sso) -> None:
    create_account(sso.rt, "root", admin=True)  # so that bob is not the last administrator
    aad = str(uuid.uuid4())
    sso.person("sub-bob", preferred_username="bob", groups=[ADMINS, "research"], oid=aad)
    browser = sso.browser()
    assert sso.sign_in("sub-bob", browser).status_code == 302
    me = browser.get("/api/v1/users/me").json()
    assert me["is_admin"] is True
    assert browser.get("/api/v1/users").status_code == 200  # an administrator's route
    with sso.rt.db.session() as db:
        research = db.scalar(select(Group).where(Group.name == "research"))
        assert research is not None
        assert db.get(GroupMember, (research.id, me["id"])) is not None
        linked = links.linked_user(db, aad)  # Entra ID's oid: the Teams user is this account
        assert linked is not None
        assert linked.id == me["id"]

    sso.person("sub-bob", preferred_username="bob", groups=["research"], oid=aad)
    again = sso.browser()
    assert sso.sign_in("sub-bob", again).status_code == 302
    assert again.get("/api/v1/users/me").json()["is_admin"] is False
    assert again.get("/api/v1/users").status_code == 403
    assert browser.get("/api/v1/users").status_code == 403  # the earlier sign-in, too


def test_a_forged_state_is_400_and_signs_nobody_in(sso: Sso) -> None:
    sso.person("sub-eve", preferred_username="eve")
    browser = sso.browser()
    callback, _ = sso.to_callback(browser, "sub-eve")
    forged = callback.replace("state=", "state=forged", 1)
    response = browser.get(forged)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "oidc_bad_state"
    assert _no_session_cookie(response)

    # A genuine callback opened by a browser that did not start the sign-in (login CSRF).
    browser = sso.browser()
    callback, _ = sso.to_callback(browser, "sub-eve")
    stranger = sso.browser()
    response = stranger.get(callback)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "oidc_bad_state"
    assert _no_session_cookie(response)
    assert stranger.get("/api/v1/users/me").status_code == 401
    with sso.rt.db.session() as db:
        assert db.scalars(select(User)).all() == []


def test_a_replayed_state_is_400_and_signs_nobody_in(sso: Sso) -> None:
    sso.person("sub-alice", preferred_username="alice")
    browser = sso.browser()
    callback, params = sso.to_callback(browser, "sub-alice")
    assert browser.get(callback).status_code == 302

    replay = sso.browser()  # the same callback, with the same state cookie
    replay.cookies.set("eonyx_oidc_state", params["state"][0])
    response = replay.get(callback)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "oidc_bad_state"
    assert _no_session_cookie(response)
    assert replay.get("/api/v1/users/me").status_code == 401


def test_a_token_for_another_audience_is_refused(sso: Sso) -> None:
    sso.person("sub-mallory", preferred_username="mallory", aud="another-client")
    browser = sso.browser()
    response = sso.sign_in("sub-mallory", browser)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "oidc_invalid_token"
    assert "another client" in response.json()["error"]["message"]
    assert _no_session_cookie(response)
    with sso.rt.db.session() as db:
        assert db.scalars(select(User)).all() == []


def test_an_expired_token_is_refused(sso: Sso) -> None:
    sso.person("sub-late", preferred_username="late", exp=int(time.time()) - 3600)
    response = sso.sign_in("sub-late")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "oidc_token_expired"
    assert "expired" in response.json()["error"]["message"]
    assert _no_session_cookie(response)


def test_a_disabled_account_is_refused_as_a_password_sign_in_is(sso: Sso) -> None:
    sso.person("sub-carol", preferred_username="carol")
    assert sso.sign_in("sub-carol").status_code == 302
    carol = sso.user("carol")
    with sso.rt.db.session() as db:
        people.update_user(db, carol.id, disabled=True)
    sso.rt.auth_changed(carol.id)

    response = sso.sign_in("sub-carol")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "account_disabled"
    assert response.json()["error"]["message"] == people.DISABLED_MESSAGE
    assert _no_session_cookie(response)

    create_account(sso.rt, "dave")  # a password sign-in of a disabled account says the same
    dave = sso.user("dave")
    with sso.rt.db.session() as db:
        people.update_user(db, dave.id, disabled=True)
    password = sso.browser().post(
        "/api/v1/auth/session", json={"username": "dave", "password": "correct horse"}
    )
    assert password.status_code == 403
    assert password.json()["error"]["message"] == response.json()["error"]["message"]


def test_without_auto_provision_only_known_accounts_sign_in(make_sso: Callable[..., Sso]) -> None:
    sso = make_sso(OIDC_AUTO_PROVISION="false")
    sso.person("sub-zed", preferred_username="zed")
    response = sso.sign_in("sub-zed")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "oidc_no_account"
    assert _no_session_cookie(response)


def test_the_sign_in_page_learns_the_provider(sso: Sso, client: Any) -> None:
    methods = sso.browser().get("/api/v1/auth/methods")
    assert methods.status_code == 200
    assert methods.json() == {
        "password": True,
        "oidc": {"name": "Example SSO", "login_url": "/api/v1/auth/oidc/login"},
    }
    # Without OIDC_ISSUER: no provider, and no sign-in route to follow.
    assert client.get("/api/v1/auth/methods").get_json() == {"password": True, "oidc": None}
    assert client.get("/api/v1/auth/oidc/login").status_code == 404


def test_single_sign_on_needs_its_client_and_public_url() -> None:
    with pytest.raises(SettingsError, match="OIDC_CLIENT_ID and PUBLIC_URL"):
        load_settings({"OIDC_ISSUER": "https://login.example.com", "OIDC_CLIENT_ID": "x"})


def test_password_sign_in_can_be_turned_off(make_sso: Callable[..., Sso]) -> None:
    sso = make_sso(PASSWORD_SIGN_IN="false")
    create_account(sso.rt, "pat")
    browser = sso.browser()
    body = {"username": "pat", "password": "correct horse"}
    for path in ("/api/v1/auth/session", "/api/v1/auth/login"):
        refused = browser.post(path, json=body)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "password_sign_in_off"
        assert "sign in with Example SSO" in refused.json()["error"]["message"]
        assert _no_session_cookie(refused)
    assert browser.get("/api/v1/auth/methods").json()["password"] is False

    sso.person("sub-pat", preferred_username="pat")  # single sign-on still works
    assert sso.sign_in("sub-pat", browser).status_code == 302
    assert browser.get("/api/v1/users/me").json()["username"] == "pat-2"
