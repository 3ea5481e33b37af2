"""The sidebar's list: order, filters, and cursors that neither repeat nor skip a session
while sessions are created, updated, pinned and unpinned between pages."""

from __future__ import annotations

import base64
import json
import random
import threading

import pytest
from flask.testing import FlaskClient

from shared.accounts import people
from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.index import sync
from shared.index.listing import Filters
from shared.runtime import Runtime
from shared.sessions import service as session_service
from tests.conftest import Account

API = "/api/v1"


def me(account: Account) -> Principal:
    return Principal(account.user_id, account.username, False, "web", "")


def new_session(client: FlaskClient, who: Account, **body: object) -> str:
    response = client.post(f"{API}/sessions", json=body, headers=who.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def say(rt: Runtime, who: Account, session_id: str, content: str = "more") -> None:
    record = {
        "type": "message",
        "id": new_message_id(),
        "role": "user",
        "content": content,
        "created_at": isoformat(utcnow()),
    }
    session_service.append_records(rt, me(who), session_id, [record])


def patch(client: FlaskClient, who: Account, session_id: str, **body: object) -> None:
    response = client.patch(f"{API}/sessions/{session_id}", json=body, headers=who.headers)
    assert response.status_code == 200, response.get_json()


def page(client: FlaskClient, who: Account, query: str = "") -> dict:
    response = client.get(f"{API}/sessions{query}", headers=who.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def ids(client: FlaskClient, who: Account, query: str = "") -> list[str]:
    return [item["id"] for item in page(client, who, query)["items"]]


def test_pinned_first_then_most_recently_updated(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    a, b, c = (new_session(client, alice, title=t) for t in "abc")
    assert ids(client, alice) == [c, b, a]
    say(rt, alice, a)
    assert ids(client, alice) == [a, c, b]
    patch(client, alice, b, pinned=True)
    assert ids(client, alice) == [b, a, c]
    say(rt, alice, c)
    assert ids(client, alice) == [b, c, a]
    say(rt, alice, a)  # an update does not beat a pin
    assert ids(client, alice) == [b, a, c]
    patch(client, alice, b, pinned=False)  # back where its last message puts it
    assert ids(client, alice) == [a, c, b]
    patch(client, alice, b, title="renamed")  # a metadata change does not move it up
    assert ids(client, alice) == [a, c, b]
    say(rt, alice, c)
    assert ids(client, alice) == [c, a, b]


def new_folder(client: FlaskClient, alice: Account) -> str:
    created = client.post(f"{API}/folders", json={"name": "Work"}, headers=alice.headers)
    assert created.status_code == 201, created.get_json()
    return created.get_json()["id"]


def test_every_item_carries_what_a_sidebar_shows(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    f1 = new_folder(client, alice)
    session_id = new_session(client, alice, title="x", folder_id=f1)
    say(rt, alice, session_id)
    fork = client.post(f"{API}/sessions/{session_id}/fork", json={}, headers=alice.headers)
    item = page(client, alice)["items"][0]
    assert item["id"] == fork.get_json()["id"]
    assert {k: item[k] for k in ("source", "pinned", "archived", "folder_id")} == {
        "source": "web",
        "pinned": False,
        "archived": False,
        "folder_id": f1,
    }
    assert (item["message_count"], item["image_count"], item["title_pending"]) == (1, 0, False)
    assert item["forked_from"] == session_id
    assert item["deleted_at"] is None
    assert item["created_at"].endswith("+00:00")
    assert item["updated_at"].endswith("+00:00")


def test_filters_by_folder_archive_trash_and_source(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    f1 = new_folder(client, alice)
    filed = new_session(client, alice, title="filed", folder_id=f1)
    unfiled = new_session(client, alice, title="unfiled")
    archived = new_session(client, alice, title="archived", folder_id=f1)
    trashed = new_session(client, alice, title="trashed", folder_id=f1)
    patch(client, alice, archived, archived=True)
    client.delete(f"{API}/sessions/{trashed}", headers=alice.headers)
    with rt.db.session() as db:
        _, token = people.create_api_key(db, me(alice), "script")
    robot = Account(alice.user_id, alice.username, token)  # alice, with an API key
    by_api = new_session(client, robot, title="from a script")

    assert ids(client, alice) == [by_api, unfiled, filed]
    assert ids(client, alice, f"?folder_id={f1}") == [filed]
    assert ids(client, alice, "?folder_id=none") == [by_api, unfiled]
    assert ids(client, alice, "?archived=true") == [archived]
    assert ids(client, alice, f"?archived=true&folder_id={f1}") == [archived]
    assert ids(client, alice, "?trash=true") == [trashed]
    assert ids(client, alice, "?source=api") == [by_api]
    assert ids(client, alice, "?source=web&folder_id=none") == [unfiled]
    bad = client.get(f"{API}/sessions?source=fax", headers=alice.headers)
    assert bad.status_code == 422
    assert "source" in bad.get_json()["error"]["message"]


def test_a_cursor_is_refused_with_other_filters_or_after_the_index_is_dropped(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    for n in range(3):
        new_session(client, alice, title=str(n))
    cursor = page(client, alice, "?limit=1")["next_cursor"]
    other = client.get(
        f"{API}/sessions?limit=1&archived=true&cursor={cursor}", headers=alice.headers
    )
    assert other.status_code == 400
    assert other.get_json()["error"]["code"] == "invalid_cursor"
    with rt.db.session() as db:
        sync.drop(db)
    assert len(ids(client, alice)) == 3  # rebuilt from the files
    expired = client.get(f"{API}/sessions?limit=1&cursor={cursor}", headers=alice.headers)
    assert expired.status_code == 400
    assert expired.get_json()["error"]["code"] == "cursor_expired"


def test_pages_neither_repeat_nor_skip_while_sessions_move_between_them(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    made = [new_session(client, alice, title=f"s{n}") for n in range(24)]
    for session_id in made[::6]:
        patch(client, alice, session_id, pinned=True)
    before = ids(client, alice, "?limit=200")
    first = page(client, alice, "?limit=4")
    seen = [item["id"] for item in first["items"]]
    assert seen == before[:4]
    cursor, step, archived = first["next_cursor"], 0, set()
    while cursor:
        unseen = [s for s in before if s not in seen and s not in archived]
        # Between pages: a new session, an unseen one updated (to the top: the classic gap),
        # a seen one updated, an unseen one pinned, a seen pinned one unpinned (down: the
        # classic duplicate), now and then an unseen one archived (it leaves the list).
        new_session(client, alice, title=f"new {step}")
        if unseen:
            say(rt, alice, unseen[-1])
            patch(client, alice, unseen[len(unseen) // 2], pinned=True)
        say(rt, alice, seen[-1])
        pinned_seen = [s for s in seen if s in made[::6]]
        if pinned_seen:
            patch(client, alice, pinned_seen[0], pinned=False)
        if step % 2 and len(unseen) > 2:
            patch(client, alice, unseen[0], archived=True)
            archived.add(unseen[0])
        result = page(client, alice, f"?limit=4&cursor={cursor}")
        seen += [item["id"] for item in result["items"]]
        cursor, step = result["next_cursor"], step + 1
    assert len(seen) == len(set(seen)), "a session was listed twice"
    assert seen == [s for s in before if s not in archived], "order as at the first page"
    assert step >= 5


@pytest.mark.parametrize("limit", [3, 7])
def test_pages_neither_repeat_nor_skip_under_concurrent_writers(
    rt: Runtime, alice: Account, limit: int
) -> None:
    """Writers in other threads create, update, pin and unpin sessions while a reader pages:
    every session that existed before the first page is listed exactly once, and nothing
    else is listed twice."""
    who = me(alice)
    old = [
        session_service.create_session(rt, who, rt.memory, title=f"old {n}").id for n in range(40)
    ]
    created: list[str] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                action = rng.random()
                target = rng.choice(old)
                if action < 0.25:
                    created.append(
                        session_service.create_session(rt, who, rt.memory, title="new").id
                    )
                elif action < 0.8:
                    say(rt, alice, target)
                else:
                    session_service.update_session(rt, who, target, {"pinned": rng.random() < 0.5})
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    try:
        seen: list[str] = []
        cursor = None
        while True:
            rows, cursor = session_service.list_sessions(
                rt, who, limit=limit, cursor=cursor, filters=Filters()
            )
            seen += [row.id for row in rows]
            if cursor is None:
                break
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert not failures, failures
    assert len(seen) == len(set(seen)), "a session was listed twice"
    assert set(old) <= set(seen), f"skipped: {set(old) - set(seen)}"
    assert set(seen) <= set(old) | set(created)


def _cursor(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _crafted(cursor: str, change: dict) -> str:
    data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for key, value in change.items():
        if key.startswith("k."):
            data["k"][int(key[2:])] = value
        else:
            data[key] = value
    return _cursor(data).replace("INF", "Infinity")


# Each keeps the fingerprint and generation of a real cursor, so only the crafted value is
# wrong. Raw JSON text (`Infinity`, a 400-digit number) goes in as a marker string.
CRAFTED_LIST_CURSORS = {
    "huge seq": {"s": 10**30},
    "negative seq": {"s": -1},
    "float seq": {"s": 1.5},
    "huge time": {"t": 10**30},
    "negative time": {"t": -(10**30)},
    "infinite time": {"t": "INF"},
    "seq as text": {"s": "12"},
    "year-1 key": {"k.1": "0001-01-01T00:00:00+14:00"},
    "year-1 key in UTC": {"k.1": "0001-01-01T00:00:00Z"},
    "key without a zone": {"k.1": "2026-07-05T09:15:00"},
    "nested key": {"k.1": {"a": [1]}},
    "nested id": {"k.2": ["20260705T091500-1a2b3c4d"]},
    "key too short": {"k": [1, "2026-07-05T09:15:00Z"]},
    "key as object": {"k": {"a": 1, "b": 2, "c": 3}},
    "pin as text": {"k.0": "yes"},
    "huge pin": {"k.0": 10**30},
    "generation nested": {"g": ["x"]},
}


@pytest.mark.parametrize("case", list(CRAFTED_LIST_CURSORS), ids=list(CRAFTED_LIST_CURSORS))
def test_a_crafted_listing_cursor_is_400_invalid_cursor(
    client: FlaskClient, alice: Account, case: str
) -> None:
    for n in range(3):
        new_session(client, alice, title=str(n))
    real = page(client, alice, "?limit=1")["next_cursor"]
    assert page(client, alice, f"?limit=1&cursor={real}")["items"]  # the real one works
    cursor = _crafted(real, CRAFTED_LIST_CURSORS[case])
    response = client.get(f"{API}/sessions?limit=1&cursor={cursor}", headers=alice.headers)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "invalid_cursor"


CRAFTED_SEARCH_OFFSETS = [10**30, -1, 1.5, "INF", "NaN", "3", [3], True]


@pytest.mark.parametrize("offset", CRAFTED_SEARCH_OFFSETS, ids=str)
def test_a_crafted_search_cursor_is_400_invalid_cursor(
    client: FlaskClient, alice: Account, rt: Runtime, offset: object
) -> None:
    for n in range(3):
        say(rt, alice, new_session(client, alice, title=f"s{n}"), "eucalyptus grows")
    real = page(client, alice, "?q=eucalyptus&limit=1")["next_cursor"]
    data = json.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))
    text = json.dumps({**data, "o": "OFFSET"}).replace('"OFFSET"', json.dumps(offset))
    text = text.replace('"INF"', "Infinity").replace('"NaN"', "NaN")
    cursor = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    response = client.get(
        f"{API}/sessions?q=eucalyptus&limit=1&cursor={cursor}", headers=alice.headers
    )
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "invalid_cursor"
