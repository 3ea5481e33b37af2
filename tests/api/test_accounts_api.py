from __future__ import annotations

from flask.testing import FlaskClient

from shared.runtime import Runtime
from tests.conftest import Account, create_account

API = "/api/v1"


def login(client: FlaskClient, username: str, password: str = "correct horse"):
    return client.post(f"{API}/auth/login", json={"username": username, "password": password})


def test_login_gives_a_web_token_that_works(client: FlaskClient, alice: Account) -> None:
    response = login(client, "alice")
    assert response.status_code == 200
    body = response.get_json()
    assert body["user"]["username"] == "alice"
    assert body["expires_at"]
    me = client.get(f"{API}/users/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.get_json()["username"] == "alice"


def test_wrong_password_and_unknown_user_look_the_same(client: FlaskClient, alice: Account) -> None:
    wrong = login(client, "alice", "incorrect")
    unknown = login(client, "nobody")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.get_json() == unknown.get_json()


def test_api_keys_are_shown_once_listed_without_value_and_revocable(
    client: FlaskClient, alice: Account
) -> None:
    created = client.post(f"{API}/tokens", json={"name": "teams bot"}, headers=alice.headers)
    assert created.status_code == 201
    key = created.get_json()
    assert key["source"] == "api"
    assert key["token"].startswith("eyx_")
    listed = client.get(f"{API}/tokens", headers=alice.headers).get_json()
    assert {t["name"] for t in listed} == {"login", "teams bot"}
    assert all("token" not in t for t in listed)

    key_headers = {"Authorization": f"Bearer {key['token']}"}
    assert client.get(f"{API}/sessions", headers=key_headers).status_code == 200
    assert client.delete(f"{API}/tokens/{key['id']}", headers=alice.headers).status_code == 204
    assert client.get(f"{API}/sessions", headers=key_headers).status_code == 401


def test_one_user_cannot_revoke_anothers_token(
    client: FlaskClient, alice: Account, bob: Account
) -> None:
    key = client.post(f"{API}/tokens", json={"name": "k"}, headers=alice.headers).get_json()
    assert client.delete(f"{API}/tokens/{key['id']}", headers=bob.headers).status_code == 404
    assert (
        client.get(
            f"{API}/sessions", headers={"Authorization": f"Bearer {key['token']}"}
        ).status_code
        == 200
    )


def test_logout_revokes_the_token(client: FlaskClient, alice: Account) -> None:
    assert client.post(f"{API}/auth/logout", headers=alice.headers).status_code == 204
    assert client.get(f"{API}/sessions", headers=alice.headers).status_code == 401


def test_expired_login_token_is_refused(client: FlaskClient, rt: Runtime) -> None:
    from datetime import timedelta

    from shared.accounts import people

    with rt.db.session() as db:
        people.create_user(db, "dave", "correct horse")
        _, token = people.login(db, "dave", "correct horse", timedelta(seconds=-1))
    response = client.get(f"{API}/sessions", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401


def test_only_admins_create_users(client: FlaskClient, admin: Account, alice: Account) -> None:
    body = {"username": "erin", "password": "long enough", "is_admin": False}
    assert client.post(f"{API}/users", json=body, headers=alice.headers).status_code == 403
    created = client.post(f"{API}/users", json=body, headers=admin.headers)
    assert created.status_code == 201
    assert created.get_json()["username"] == "erin"
    assert login(client, "erin", "long enough").status_code == 200
    again = client.post(f"{API}/users", json=body, headers=admin.headers)
    assert again.status_code == 409
    assert again.get_json()["error"]["code"] == "user_exists"


def test_stored_tokens_and_passwords_are_hashed(rt: Runtime) -> None:
    account = create_account(rt, "frank")
    from sqlalchemy import select

    from shared.db.orm import ApiToken, User

    with rt.db.session() as db:
        user = db.scalar(select(User).where(User.username == "frank"))
        hashes = list(db.scalars(select(ApiToken.token_hash)))
    assert "correct horse" not in user.password_hash
    assert account.token not in hashes
    assert all(len(h) == 64 for h in hashes)


def test_openapi_document_is_served(client: FlaskClient) -> None:
    spec = client.get(f"{API}/openapi.json").get_json()
    assert spec["info"]["title"] == "Eonyx"
    for path in (
        "/api/v1/sessions",
        "/api/v1/sessions/{session_id}",
        "/api/v1/auth/login",
        "/api/v1/tokens",
        "/api/v1/users",
        "/api/v1/sessions/{session_id}/messages",
    ):
        assert path in spec["paths"], path


def test_unknown_route_and_method_are_json(client: FlaskClient, alice: Account) -> None:
    missing = client.get(f"{API}/nothing-here")
    assert missing.status_code == 404
    assert missing.get_json()["error"]["code"] == "not_found"
    wrong = client.put(f"{API}/sessions", headers=alice.headers)
    assert wrong.status_code == 405
    assert wrong.get_json()["error"]["code"] == "method_not_allowed"


def test_a_token_shows_when_it_was_last_used(client: FlaskClient, alice: Account) -> None:
    key = client.post(f"{API}/tokens", json={"name": "cli"}, headers=alice.headers).get_json()

    def last_used() -> str | None:
        listed = client.get(f"{API}/tokens", headers=alice.headers).get_json()
        return next(t["last_used_at"] for t in listed if t["id"] == key["id"])

    assert last_used() is None
    client.get(f"{API}/sessions", headers={"Authorization": f"Bearer {key['token']}"})
    first = last_used()
    assert first is not None
    client.get(f"{API}/sessions", headers={"Authorization": f"Bearer {key['token']}"})
    assert last_used() == first  # written at most every five minutes, not on every request
