"""The text rule (shared/core/text.py) at the edge of every route, and an index that odd text
already in the files cannot break, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.exc import OperationalError

from shared.index import sync
from shared.runtime import Runtime
from tests.conftest import Account

API = "/api/v1"
SESSION = "20260705T091500-1a2b3c4d"  # well-formed; the text check comes before any lookup

BAD_TEXT = {
    "nul": "a\x00b",
    "escape": "red \x1b[31malert\x1b[0m",
    "bell": "ding\x07",
    "c1": "next\x85line",
    "bidi override": "invoice\u202egnp.exe",
    "bidi isolate": "a\u2066b",
    "lone surrogate": "x\ud800y",
}
LINE_BREAKS = {"newline": "two\nlines", "tab": "a\tb", "carriage return": "a\rb"}

# (method, path, who, body builder) for every string field a client sends in JSON
JSON_FIELDS: list[tuple[str, str, str, str, Callable[[str], Any], bool]] = [
    # method, path, caller, field, body, single line
    ("POST", "/auth/login", "none", "username", lambda v: {"username": v, "password": "x"}, True),
    ("POST", "/auth/login", "none", "password", lambda v: {"username": "a", "password": v}, True),
    ("POST", "/users", "admin", "username", lambda v: {"username": v, "password": "p" * 8}, True),
    (
        "POST",
        "/users",
        "admin",
        "password",
        lambda v: {"username": "x", "password": v + "pw12345"},
        True,
    ),
    ("POST", "/tokens", "alice", "name", lambda v: {"name": v}, True),
    ("POST", "/sessions", "alice", "title", lambda v: {"title": v}, True),
    ("POST", "/sessions", "alice", "folder_id", lambda v: {"folder_id": v}, True),
    ("PATCH", f"/sessions/{SESSION}", "alice", "title", lambda v: {"title": v}, True),
    ("PATCH", f"/sessions/{SESSION}", "alice", "folder_id", lambda v: {"folder_id": v}, True),
    ("POST", f"/sessions/{SESSION}/turns", "alice", "content", lambda v: {"content": v}, False),
    (
        "POST",
        f"/sessions/{SESSION}/turns",
        "alice",
        "system_prompt",
        lambda v: {"content": "hi", "system_prompt": v},
        False,
    ),
    (
        "POST",
        f"/sessions/{SESSION}/turns",
        "alice",
        "cwd",
        lambda v: {"content": "hi", "cwd": v},
        True,
    ),
    (
        "POST",
        f"/sessions/{SESSION}/turns",
        "alice",
        "project_context.0.path",
        lambda v: {"content": "hi", "project_context": [{"path": v, "content": "c"}]},
        True,
    ),
    (
        "POST",
        f"/sessions/{SESSION}/turns",
        "alice",
        "project_context.0.content",
        lambda v: {"content": "hi", "project_context": [{"path": "AGENTS.md", "content": v}]},
        False,
    ),
    ("PUT", "/memory/user", "alice", "content", lambda v: {"content": v}, False),
    ("PUT", "/memory/user", "alice", "version", lambda v: {"content": "", "version": v}, True),
    ("POST", "/models/offerings", "admin", "id", lambda v: _offering(id=v), True),
    ("POST", "/models/offerings", "admin", "base_url", lambda v: _offering(base_url=v), True),
    ("POST", "/models/offerings", "admin", "model", lambda v: _offering(model=v), True),
    ("POST", "/models/offerings", "admin", "api_key_env", lambda v: _offering(api_key_env=v), True),
    ("PUT", "/models/roles/chat", "admin", "offering_id", lambda v: {"offering_id": v}, True),
]


def _offering(**change: str) -> dict[str, Any]:
    return {"id": "o1", "base_url": "http://127.0.0.1:9/v1", "model": "m", **change}


def _headers(who: str, accounts: dict[str, Account]) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    return headers | (accounts[who].headers if who in accounts else {})


def _send(client: FlaskClient, method: str, path: str, body: Any, headers: dict[str, str]):
    # json.dumps escapes a lone surrogate as \ud800, as a client's JSON library would
    return client.open(f"{API}{path}", method=method, data=json.dumps(body), headers=headers)


@pytest.mark.parametrize(("kind", "value"), list(BAD_TEXT.items()), ids=list(BAD_TEXT))
def test_every_json_text_field_refuses_control_characters_with_a_422_naming_it(
    client: FlaskClient, alice: Account, admin: Account, kind: str, value: str
) -> None:
    accounts = {"alice": alice, "admin": admin}
    for method, path, who, field, body, _ in JSON_FIELDS:
        response = _send(client, method, path, body(value), _headers(who, accounts))
        assert response.status_code == 422, (method, path, field, response.get_json())
        message = response.get_json()["error"]["message"]
        assert message.startswith(f"{field}: contains "), (method, path, message)


@pytest.mark.parametrize(("kind", "value"), list(LINE_BREAKS.items()), ids=list(LINE_BREAKS))
def test_one_line_fields_refuse_line_breaks_and_text_fields_take_them(
    client: FlaskClient, alice: Account, admin: Account, kind: str, value: str
) -> None:
    accounts = {"alice": alice, "admin": admin}
    for method, path, who, field, body, single_line in JSON_FIELDS:
        response = _send(client, method, path, body(value), _headers(who, accounts))
        error = (response.get_json() or {}).get("error") or {}
        refused = response.status_code == 422 and error["message"].startswith(f"{field}: ")
        assert refused == single_line, (method, path, field, response.status_code, error)


@pytest.mark.parametrize("param", ["q", "folder_id", "cursor"])
@pytest.mark.parametrize("value", ["%00", "a%1B%5B31m", "%E2%80%AE", "a%0Ab"])
def test_query_arguments_refuse_control_characters(
    client: FlaskClient, alice: Account, param: str, value: str
) -> None:
    response = client.get(f"{API}/sessions?{param}={value}", headers=alice.headers)
    assert response.status_code == 422
    assert response.get_json()["error"]["message"].startswith(f"{param}: ")


def test_a_refused_create_or_rename_changes_nothing(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    refused = client.post(f"{API}/sessions", json={"title": "a\x00b"}, headers=alice.headers)
    assert refused.status_code == 422
    assert list(rt.store.scan(alice.user_id)) == []  # no session file was written
    item = client.post(f"{API}/sessions", json={"title": "kept"}, headers=alice.headers).get_json()
    patch = client.patch(
        f"{API}/sessions/{item['id']}", json={"title": "x\x00y"}, headers=alice.headers
    )
    assert patch.status_code == 422
    shown = client.get(f"{API}/sessions/{item['id']}", headers=alice.headers).get_json()
    assert shown["title"] == "kept"
    listed = client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    assert [i["title"] for i in listed] == ["kept"]


def test_a_create_whose_index_row_fails_leaves_no_file(
    client: FlaskClient, alice: Account, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise OperationalError("INSERT", {}, Exception("the database went away"))

    monkeypatch.setattr(sync, "record", broken)
    response = client.post(f"{API}/sessions", json={"title": "doomed"}, headers=alice.headers)
    assert response.status_code == 500
    assert list(rt.store.scan(alice.user_id)) == []


def test_odd_text_already_in_the_files_never_breaks_listing_reads_renames_or_deletes(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    """Files written before the rule (or by hand) may hold NUL, escapes and bidi controls:
    PostgreSQL text cannot hold NUL, so the index keeps a cleaned copy, the file the truth."""
    odd = "bad\x00title \x1b[31m\u202e\ud800"
    state, _ = rt.store.create(alice.user_id, source="web", title=odd, folder_id="f\x00")
    rt.store.append(
        alice.user_id,
        state.id,
        [{"type": "meta", "at": "2026-07-05T09:16:00Z", "set": {"title": odd + "!"}}],
    )
    with rt.db.session() as db:
        sync.drop(db)  # the documented `eonyx index rebuild --drop`
    listed = client.get(f"{API}/sessions", headers=alice.headers)
    assert listed.status_code == 200
    assert listed.get_json()["items"][0]["title"] == "badtitle \x1b[31m\u202e\ufffd!"
    url = f"{API}/sessions/{state.id}"
    assert client.get(url, headers=alice.headers).status_code == 200
    assert client.get(f"{url}/messages", headers=alice.headers).status_code == 200
    kept, _ = rt.store.load(alice.user_id, state.id)
    assert (kept.title, kept.folder_id) == (odd + "!", "f\x00")  # the file keeps the exact text
    renamed = client.patch(url, json={"title": "fixed"}, headers=alice.headers)
    assert renamed.status_code == 200
    assert renamed.get_json()["title"] == "fixed"
    assert client.delete(url, headers=alice.headers).status_code == 204


def test_a_first_message_becomes_a_clean_one_line_title(
    make_chat: Callable[..., Any],
) -> None:
    chat = make_chat()
    session_id = chat.new_session()
    assert chat.turn(session_id, content="a\x00b").status_code == 422  # never saved
    assert chat.transcript(session_id) == []
    answered = chat.turn(session_id, content="Plan\tthe\n\nrelease  notes")
    assert answered.status_code == 200
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert item["title"] == "Plan the release notes"
    assert chat.transcript(session_id)[0] == ("user", "Plan\tthe\n\nrelease  notes")
