from __future__ import annotations

import base64
import errno
import json
import os

import pytest
from flask.testing import FlaskClient

from shared.files import filestore
from shared.runtime import Runtime
from tests.conftest import Account, create_account

API = "/api/v1"


def new_session(client: FlaskClient, who: Account, **body: object) -> dict:
    response = client.post(f"{API}/sessions", json=body, headers=who.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_create_then_list_and_get(client: FlaskClient, alice: Account) -> None:
    item = new_session(client, alice, title="Parser work")
    assert item["title"] == "Parser work"
    assert item["source"] == "web"
    assert item["message_count"] == 0
    assert set(item) >= {
        "id",
        "title",
        "title_pending",
        "source",
        "pinned",
        "archived",
        "folder_id",
        "message_count",
        "image_count",
        "created_at",
        "updated_at",
    }

    listing = client.get(f"{API}/sessions", headers=alice.headers).get_json()
    assert [s["id"] for s in listing["items"]] == [item["id"]]
    assert listing["next_cursor"] is None
    assert client.get(f"{API}/sessions/{item['id']}", headers=alice.headers).get_json() == item
    assert client.get(
        f"{API}/sessions/{item['id']}/messages", headers=alice.headers
    ).get_json() == {"items": []}


def test_sessions_made_with_an_api_key_have_source_api(client: FlaskClient, rt: Runtime) -> None:
    carol = create_account(rt, "carol", api=True)
    assert new_session(client, carol)["source"] == "api"


def test_patch_renames_pins_and_archives(client: FlaskClient, alice: Account) -> None:
    first = new_session(client, alice, title="one")
    second = new_session(client, alice, title="two")
    patched = client.patch(
        f"{API}/sessions/{first['id']}",
        json={"title": "  renamed  ", "pinned": True},
        headers=alice.headers,
    )
    assert patched.status_code == 200
    assert patched.get_json()["title"] == "renamed"
    ids = [
        s["id"] for s in client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    ]
    assert ids == [first["id"], second["id"]]

    client.patch(f"{API}/sessions/{second['id']}", json={"archived": True}, headers=alice.headers)
    listed = client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    archived = client.get(f"{API}/sessions?archived=true", headers=alice.headers).get_json()
    assert [s["id"] for s in listed] == [first["id"]]
    assert [s["id"] for s in archived["items"]] == [second["id"]]


def test_delete_with_purge_removes_the_session_and_its_file(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    item = new_session(client, alice)
    url = f"{API}/sessions/{item['id']}"
    assert client.delete(f"{url}?purge=true", headers=alice.headers).status_code == 204
    assert client.get(url, headers=alice.headers).status_code == 404
    assert not rt.store.path(alice.user_id, item["id"]).exists()


def test_cursor_pagination_over_http(client: FlaskClient, alice: Account) -> None:
    ids = [new_session(client, alice, title=str(n))["id"] for n in range(5)]
    seen, cursor = [], None
    while True:
        query = f"?limit=2&cursor={cursor}" if cursor else "?limit=2"
        page = client.get(f"{API}/sessions{query}", headers=alice.headers).get_json()
        seen += [s["id"] for s in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == ids[::-1]


def test_q_searches_titles(client: FlaskClient, alice: Account) -> None:
    new_session(client, alice, title="Parser refactor")
    new_session(client, alice, title="Lunch")
    page = client.get(f"{API}/sessions?q=PARSER", headers=alice.headers).get_json()
    assert [s["title"] for s in page["items"]] == ["Parser refactor"]


def test_another_users_session_is_not_found_everywhere(
    client: FlaskClient, alice: Account, bob: Account, rt: Runtime
) -> None:
    secret = new_session(client, alice, title="alice's plans")
    url = f"{API}/sessions/{secret['id']}"
    assert client.get(url, headers=bob.headers).status_code == 404
    assert client.get(f"{url}/messages", headers=bob.headers).status_code == 404
    assert client.patch(url, json={"title": "mine"}, headers=bob.headers).status_code == 404
    assert client.delete(url, headers=bob.headers).status_code == 404
    assert client.get(f"{API}/sessions", headers=bob.headers).get_json()["items"] == []
    assert client.get(f"{API}/sessions?q=plans", headers=bob.headers).get_json()["items"] == []
    body = client.get(url, headers=bob.headers).get_json()
    assert body["error"]["code"] == "not_found"
    # ...and nothing of Alice's changed.
    assert client.get(url, headers=alice.headers).get_json() == secret


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}]
)
def test_no_valid_token_is_401(client: FlaskClient, headers: dict[str, str]) -> None:
    response = client.get(f"{API}/sessions", headers=headers)
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] in {"missing_token", "invalid_token"}


def test_malformed_json_is_400_with_a_json_error(client: FlaskClient, alice: Account) -> None:
    response = client.post(
        f"{API}/sessions", data='{"title": ', headers=alice.headers, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"title": "x", "colour": "red"}, "colour: unknown field"),
        ({"title": 5}, "title: not a valid string"),
        ({"temporary": "perhaps"}, "temporary: not a valid boolean"),
        (["not", "an", "object"], "body: invalid input type"),
        ({"title": "x" * 201}, "title: longer than maximum length 200"),
    ],
)
def test_invalid_bodies_are_4xx_naming_the_field_and_the_reason(
    client: FlaskClient, alice: Account, body: object, message: str
) -> None:
    response = client.post(f"{API}/sessions", json=body, headers=alice.headers)
    assert response.status_code == 422
    error = response.get_json()["error"]
    assert (error["code"], error["message"]) == ("invalid_request", message)
    assert client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"] == []


def test_patch_rejects_unknown_fields(client: FlaskClient, alice: Account) -> None:
    item = new_session(client, alice, title="keep")
    response = client.patch(
        f"{API}/sessions/{item['id']}", json={"owner": "bob"}, headers=alice.headers
    )
    assert response.status_code == 422
    assert "owner" in response.get_json()["error"]["message"]


def test_oversize_body_is_413(client: FlaskClient, alice: Account) -> None:
    response = client.post(
        f"{API}/sessions", json={"title": "x" * (2 * 1024 * 1024)}, headers=alice.headers
    )
    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize(
    "bad", ["..%2Fx", "%2e%2e", "20260705T091500-1a2b3c4", "x" * 300, "20260705T091500-1a2b3c4dz"]
)
def test_bad_session_ids_are_4xx(client: FlaskClient, alice: Account, bad: str) -> None:
    response = client.get(f"{API}/sessions/{bad}", headers=alice.headers)
    assert 400 <= response.status_code < 500
    assert "error" in response.get_json()


def test_a_cursor_that_is_not_base64url_is_422(client: FlaskClient, alice: Account) -> None:
    response = client.get(f"{API}/sessions?cursor=garbage!", headers=alice.headers)
    assert response.status_code == 422
    assert response.get_json()["error"]["message"].startswith("cursor: ")


def _cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "forged",
    [
        _cursor([1, "2026-01-01T00:00:00", "20260101T000000-0000abcd"]),  # a time without a zone
        _cursor([[1], {}, 3]),  # wrong types
        _cursor([1, 5, "x"]),
        _cursor([0, "2026-01-01T00:00:00Z", "../../x"]),  # not a session id
        _cursor([0, "2026-01-01T00:00:00Z", "\u0000"]),
        _cursor({"a": 1, "b": 2, "c": 3}),
        _cursor("just a string"),
        "garbage",
    ],
)
def test_a_forged_cursor_is_400(client: FlaskClient, alice: Account, forged: str) -> None:
    new_session(client, alice, title="one")
    response = client.get(f"{API}/sessions?cursor={forged}", headers=alice.headers)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_cursor"


def test_a_failing_disk_aborts_with_a_clear_error_and_keeps_the_file(
    client: FlaskClient, alice: Account, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = new_session(client, alice, title="before")
    path = rt.store.path(alice.user_id, item["id"])
    before = path.read_bytes()

    def no_space(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(filestore.os, "write", no_space)
    response = client.patch(
        f"{API}/sessions/{item['id']}", json={"title": "after"}, headers=alice.headers
    )
    monkeypatch.undo()
    assert response.status_code == 503
    assert response.get_json()["error"] == {
        "code": "storage_error",
        "message": f"could not save to {path.name}: No space left on device",
    }
    assert path.read_bytes() == before
    assert (
        client.get(f"{API}/sessions/{item['id']}", headers=alice.headers).get_json()["title"]
        == "before"
    )


def test_a_damaged_session_file_is_503_not_404_and_the_list_still_works(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    kept = new_session(client, alice, title="fine")
    damaged = "20260101T000000-0badf11e"
    path = rt.store.path(alice.user_id, damaged)
    path.write_text('{"type": "message", "role": "user", "content": "no header"}\n')
    response = client.get(f"{API}/sessions/{damaged}", headers=alice.headers)
    assert response.status_code == 503
    assert response.get_json()["error"]["message"] == (
        f"session {damaged} cannot be read: a session file must start with a session header"
    )
    from shared.index import sync

    with rt.db.session() as db:
        sync.drop(db)
    listed = client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    assert [s["id"] for s in listed] == [kept["id"]]
