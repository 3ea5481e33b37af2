"""API keys limited to scopes, one entry written from outside a chat, and notes: what
`eonyx mcp` stands on (tests/cli/test_mcp.py drives it end to end)."""

from __future__ import annotations

from flask.testing import FlaskClient

import api.events
from tests.api import websockets
from tests.api.conftest import API, Chat, live_events
from tests.conftest import Account


def _key(client: FlaskClient, owner: Account, *scopes: str) -> dict[str, str]:
    made = client.post(
        f"{API}/tokens", json={"name": "agent", "scopes": list(scopes)}, headers=owner.headers
    )
    assert made.status_code == 201, made.get_json()
    assert made.get_json()["scopes"] == (sorted(scopes) or None)
    return {"Authorization": f"Bearer {made.get_json()['token']}"}


def test_a_scoped_key_may_call_only_the_routes_of_its_scopes(
    client: FlaskClient, alice: Account
) -> None:
    reader = _key(client, alice, "memory:read", "sessions:read")

    current = client.get(f"{API}/tokens/current", headers=reader).get_json()
    assert current["full_access"] is False
    assert current["scopes"] == ["memory:read", "sessions:read"]
    assert client.get(f"{API}/memory/agent", headers=reader).status_code == 200
    assert client.get(f"{API}/sessions?q=anything", headers=reader).status_code == 200

    # A write, a route no scope names, and making another key: refused, saying why.
    write = client.post(
        f"{API}/memory/agent/entries", json={"action": "add", "content": "x"}, headers=reader
    )
    assert write.status_code == 403
    assert write.get_json()["error"]["code"] == "missing_scope"
    assert "'memory:write'" in write.get_json()["error"]["message"]
    for method, path in (("post", "/sessions"), ("post", "/tokens"), ("get", "/tokens")):
        refused = getattr(client, method)(f"{API}{path}", json={"name": "x"}, headers=reader)
        assert refused.status_code == 403, path
        assert "without scopes" in refused.get_json()["error"]["message"]
    # The OpenAI-compatible facade is not a scope's either.
    assert client.get("/v1/models", headers=reader).status_code == 403

    # A key made without scopes, like every key made before them, may do everything.
    full = _key(client, alice)
    current = client.get(f"{API}/tokens/current", headers=full).get_json()
    assert current["full_access"] is True
    assert current["scopes"] == ["memory:read", "memory:write", "sessions:read"]
    assert client.post(f"{API}/sessions", json={}, headers=full).status_code == 201
    listed = client.get(f"{API}/tokens", headers=alice.headers).get_json()
    assert sorted(str(t["scopes"]) for t in listed) == sorted(
        ["None", "None", "['memory:read', 'sessions:read']"]
    )


def test_an_unknown_scope_is_refused_by_name(client: FlaskClient, alice: Account) -> None:
    response = client.post(
        f"{API}/tokens",
        json={"name": "agent", "scopes": ["memory:read", "memory:delete"]},
        headers=alice.headers,
    )
    assert response.status_code == 422
    assert "memory:delete" in str(response.get_json()["error"])


def test_an_entry_is_written_like_the_chat_tools_write_it(chat: Chat) -> None:
    headers = chat.user.headers
    url = f"{API}/memory/agent/entries"
    with live_events(chat) as seen:
        added = chat.client.post(
            url, json={"action": "add", "content": "Uses pnpm, not npm"}, headers=headers
        )
    assert added.status_code == 200, added.get_json()
    assert added.get_json()["message"].startswith(
        "Saved: added 'Uses pnpm, not npm' to MEMORY.md. MEMORY.md is now "
    )
    assert added.get_json()["file"]["content"] == "- Uses pnpm, not npm\n"
    assert seen == [
        {
            "type": "memory.updated",
            "file": "MEMORY.md",
            "action": "added",
            "entry": "Uses pnpm, not npm",
        }
    ]

    # The duplicate check, the filter and a missing entry refuse, in one sentence each.
    duplicate = chat.client.post(
        url, json={"action": "add", "content": "uses pnpm, NOT npm"}, headers=headers
    )
    assert duplicate.status_code == 400
    assert "already saved" in duplicate.get_json()["error"]["message"]
    secret = chat.client.post(
        url,
        json={"action": "add", "content": "deploy token ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
        headers=headers,
    )
    assert secret.status_code == 400
    assert secret.get_json()["error"]["code"] == "blocked_by_filter"
    missing = chat.client.post(url, json={"action": "remove", "old_text": "yarn"}, headers=headers)
    assert missing.status_code == 400
    assert "no entry contains 'yarn'" in missing.get_json()["error"]["message"]
    assert chat.rt.memory.read("agent", chat.user.user_id).content == "- Uses pnpm, not npm\n"

    replaced = chat.client.post(
        url, json={"action": "replace", "old_text": "pnpm", "content": "Uses bun"}, headers=headers
    )
    assert "replaced 'Uses pnpm, not npm' with 'Uses bun'" in replaced.get_json()["message"]
    backups = chat.client.get(f"{API}/memory/agent/backups", headers=headers).get_json()
    assert len(backups) == 1  # the file as it was before the replace
    # The identity stays read-only here, even for an administrator's key.
    identity = chat.client.post(
        f"{API}/memory/identity/entries", json={"action": "add", "content": "x"}, headers=headers
    )
    assert identity.status_code == 403
    assert "read-only" in identity.get_json()["error"]["message"]
    bad = chat.client.post(url, json={"action": "replace", "content": "x"}, headers=headers)
    assert bad.status_code == 422
    assert "old_text" in str(bad.get_json()["error"])


def test_notes_go_to_a_named_session_or_to_the_working_directory_s(
    client: FlaskClient, alice: Account, bob: Account
) -> None:
    writer = _key(client, alice, "memory:write", "sessions:read")
    first = client.post(
        f"{API}/notes",
        json={"note": "Migrated the db to v8", "workdir": "/src/shop", "agent": "Claude Code"},
        headers=writer,
    )
    assert first.status_code == 201, first.get_json()
    notebook = first.get_json()["session"]
    assert first.get_json()["created"] is True
    assert (notebook["source"], notebook["title"]) == ("mcp", "Notes: shop")
    again = client.post(
        f"{API}/notes", json={"note": "Then ran the tests", "workdir": "/src/shop"}, headers=writer
    )
    assert again.get_json()["created"] is False
    assert again.get_json()["session"]["id"] == notebook["id"]
    messages = client.get(f"{API}/sessions/{notebook['id']}/messages", headers=writer).get_json()[
        "items"
    ]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Note from Claude Code: Migrated the db to v8"),
        ("user", "Note from a coding agent: Then ran the tests"),
    ]
    found = client.get(f"{API}/sessions?q=migrated", headers=writer).get_json()["items"]
    assert [s["id"] for s in found] == [notebook["id"]]

    # A named session of one's own takes a note; another user's is not found.
    mine = client.post(f"{API}/sessions", json={}, headers=alice.headers).get_json()["id"]
    named = client.post(f"{API}/notes", json={"note": "hi", "session_id": mine}, headers=writer)
    assert named.status_code == 201
    theirs = client.post(f"{API}/sessions", json={}, headers=bob.headers).get_json()["id"]
    other = client.post(f"{API}/notes", json={"note": "hi", "session_id": theirs}, headers=writer)
    assert other.status_code == 404
    nowhere = client.post(f"{API}/notes", json={"note": "hi"}, headers=writer)
    assert nowhere.status_code == 422
    reader = _key(client, alice, "sessions:read")
    assert (
        client.post(
            f"{API}/notes", json={"note": "hi", "session_id": mine}, headers=reader
        ).status_code
        == 403
    )


def test_a_scoped_key_opens_no_events_socket(chat: Chat) -> None:
    """The events carry everything of the user's (titles, likes, memory): no scope's."""
    reader = _key(chat.client, chat.user, "memory:read")
    with websockets.live(chat.app) as url:
        seen, code = websockets.connect(url, headers=reader).until_closed()
    assert code == api.events.POLICY_VIOLATION
    assert seen[0]["error"]["code"] == "missing_scope"
