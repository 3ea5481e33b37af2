"""Folders: create, rename, recolor from the palette, order, delete (sessions unfiled, never
deleted), filing sessions, healing broken stored values, and each device's sidebar state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select, text

from shared.core.clock import utcnow
from shared.db.orm import DeviceUiState, Folder
from shared.index import sync
from shared.runtime import Runtime
from tests.conftest import Account

API = "/api/v1"


def folder(client: FlaskClient, who: Account, name: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"{API}/folders", json={"name": name, **body}, headers=who.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def folders(client: FlaskClient, who: Account) -> list[tuple[str, str, int]]:
    body = client.get(f"{API}/folders", headers=who.headers).get_json()
    return [(f["name"], f["color"], f["position"]) for f in body["items"]]


def new_session(client: FlaskClient, who: Account, **body: Any) -> dict[str, Any]:
    response = client.post(f"{API}/sessions", json=body, headers=who.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_create_rename_recolor_and_order_folders(client: FlaskClient, alice: Account) -> None:
    work = folder(client, alice, "Work", color="blue")
    home = folder(client, alice, "  Home   stuff ")
    trips = folder(client, alice, "Trips", color="green")
    assert folders(client, alice) == [
        ("Work", "blue", 0),
        ("Home stuff", "gray", 1),
        ("Trips", "green", 2),
    ]
    palette = client.get(f"{API}/folders", headers=alice.headers).get_json()["palette"]
    assert {"name": "blue", "hex": "#3b82f6"} in palette

    bad = client.post(
        f"{API}/folders", json={"name": "X", "color": "#123456"}, headers=alice.headers
    )
    assert bad.status_code == 422
    assert "palette" in str(bad.get_json()["error"]["details"])
    blank = client.post(f"{API}/folders", json={"name": "   "}, headers=alice.headers)
    assert blank.status_code == 400

    url = f"{API}/folders/{home['id']}"
    patched = client.patch(url, json={"name": "Home", "color": "pink"}, headers=alice.headers)
    assert patched.status_code == 200
    assert patched.get_json()["name"] == "Home"

    order = client.put(
        f"{API}/folders/order", json={"ids": [trips["id"], work["id"]]}, headers=alice.headers
    )
    assert order.status_code == 200
    assert [f["name"] for f in order.get_json()["items"]] == ["Trips", "Work", "Home"]
    assert folders(client, alice) == [
        ("Trips", "green", 0),
        ("Work", "blue", 1),
        ("Home", "pink", 2),
    ]

    twice = client.put(
        f"{API}/folders/order", json={"ids": [work["id"], work["id"]]}, headers=alice.headers
    )
    assert twice.status_code == 400
    unknown = client.put(f"{API}/folders/order", json={"ids": ["f" * 32]}, headers=alice.headers)
    assert unknown.status_code == 404
    assert [name for name, _, _ in folders(client, alice)] == ["Trips", "Work", "Home"]


def test_another_users_folders_are_not_found(
    client: FlaskClient, alice: Account, bob: Account
) -> None:
    mine = folder(client, alice, "Mine")
    url = f"{API}/folders/{mine['id']}"
    assert client.patch(url, json={"name": "Bob's"}, headers=bob.headers).status_code == 404
    assert client.delete(url, headers=bob.headers).status_code == 404
    order = client.put(f"{API}/folders/order", json={"ids": [mine["id"]]}, headers=bob.headers)
    assert order.status_code == 404
    assert folders(client, bob) == []
    # Bob cannot file a session into Alice's folder, on creation or later.
    filed = client.post(f"{API}/sessions", json={"folder_id": mine["id"]}, headers=bob.headers)
    assert filed.status_code == 404
    session = new_session(client, bob)
    moved = client.patch(
        f"{API}/sessions/{session['id']}", json={"folder_id": mine["id"]}, headers=bob.headers
    )
    assert moved.status_code == 404
    assert folders(client, alice) == [("Mine", "gray", 0)]


def test_filing_sessions_and_deleting_a_folder_unfiles_them(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    work = folder(client, alice, "Work")
    inside = [new_session(client, alice, folder_id=work["id"])["id"] for _ in range(2)]
    moved = new_session(client, alice)["id"]
    patched = client.patch(
        f"{API}/sessions/{moved}", json={"folder_id": work["id"]}, headers=alice.headers
    )
    assert patched.status_code == 200
    assert patched.get_json()["folder_id"] == work["id"]
    outside = new_session(client, alice)["id"]

    listed = client.get(f"{API}/sessions?folder_id={work['id']}", headers=alice.headers)
    assert {s["id"] for s in listed.get_json()["items"]} == {*inside, moved}

    assert client.delete(f"{API}/folders/{work['id']}", headers=alice.headers).status_code == 204
    assert folders(client, alice) == []
    items = client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    assert {s["id"]: s["folder_id"] for s in items} == dict.fromkeys([*inside, moved, outside])

    # The files say so too: an index rebuilt from them has every session, unfiled.
    with rt.db.session() as db:
        sync.drop(db)
    items = client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    assert {s["id"]: s["folder_id"] for s in items} == dict.fromkeys([*inside, moved, outside])


def test_broken_stored_folders_heal_on_read(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    ids = [folder(client, alice, name)["id"] for name in ("a", "b", "c", "d", "e")]
    start = utcnow()
    broken = {
        ids[0]: ("chartreuse", 7),
        ids[1]: (None, None),
        ids[2]: ("", 3),
        ids[3]: ("blue", 3),
        ids[4]: ("red", -2),
    }
    with rt.db.session() as db:
        for number, (folder_id, (color, position)) in enumerate(broken.items()):
            row = db.get_one(Folder, folder_id)
            row.color, row.position = color, position
            row.created_at = start + timedelta(seconds=number)

    response = client.get(f"{API}/folders", headers=alice.headers)
    assert response.status_code == 200
    # Order kept where it says something (-2, 3, 3 by age, 7), missing last; colors repaired.
    assert folders(client, alice) == [
        ("e", "red", 0),
        ("c", "gray", 1),
        ("d", "blue", 2),
        ("a", "gray", 3),
        ("b", "gray", 4),
    ]
    with rt.db.session() as db:  # written back, not only shown
        stored = db.execute(select(Folder.position, Folder.color).order_by(Folder.position))
        assert [tuple(row) for row in stored] == [
            (0, "red"),
            (1, "gray"),
            (2, "blue"),
            (3, "gray"),
            (4, "gray"),
        ]

    # Writes work on a broken list too: a new folder goes last, an order applies.
    with rt.db.session() as db:
        db.execute(text("UPDATE folders SET position = NULL"))
    folder(client, alice, "f", color="teal")
    assert [(n, p) for n, _, p in folders(client, alice)][-1] == ("f", 5)
    reorder = client.put(f"{API}/folders/order", json={"ids": [ids[4]]}, headers=alice.headers)
    assert reorder.status_code == 200
    assert folders(client, alice)[0][0] == "e"


def test_each_device_remembers_its_collapsed_folders_and_sections(
    client: FlaskClient, alice: Account, bob: Account, rt: Runtime
) -> None:
    work = folder(client, alice, "Work")["id"]
    home = folder(client, alice, "Home")["id"]
    laptop = f"{API}/devices/laptop-1/ui-state"
    assert client.get(laptop, headers=alice.headers).get_json() == {
        "device_id": "laptop-1",
        "sections_collapsed": {"folders": False, "chats": False},
        "folders_collapsed": {work: True, home: True},
    }
    put = client.put(
        laptop,
        json={"sections_collapsed": {"chats": True}, "folders_collapsed": {work: False}},
        headers=alice.headers,
    )
    assert put.status_code == 200
    expected = {
        "device_id": "laptop-1",
        "sections_collapsed": {"folders": False, "chats": True},
        "folders_collapsed": {work: False, home: True},
    }
    assert put.get_json() == expected
    assert client.get(laptop, headers=alice.headers).get_json() == expected
    # Only what is sent changes.
    client.put(laptop, json={"folders_collapsed": {home: False}}, headers=alice.headers)
    state = client.get(laptop, headers=alice.headers).get_json()
    assert state["sections_collapsed"]["chats"] is True
    assert state["folders_collapsed"] == {work: False, home: False}

    phone = client.get(f"{API}/devices/phone/ui-state", headers=alice.headers).get_json()
    assert phone["folders_collapsed"] == {work: True, home: True}
    assert phone["sections_collapsed"] == {"folders": False, "chats": False}
    # Another user: their own state, never Alice's folders.
    theirs = client.get(laptop, headers=bob.headers).get_json()
    assert theirs["folders_collapsed"] == {}
    ignored = client.put(laptop, json={"folders_collapsed": {work: False}}, headers=bob.headers)
    assert ignored.get_json()["folders_collapsed"] == {}

    # A deleted folder leaves the state; a new one starts collapsed.
    client.delete(f"{API}/folders/{work}", headers=alice.headers)
    new = folder(client, alice, "New")["id"]
    state = client.get(laptop, headers=alice.headers).get_json()
    assert state["folders_collapsed"] == {home: False, new: True}

    # Bad input is refused; garbage stored is read as the defaults.
    bad_section = client.put(
        laptop, json={"sections_collapsed": {"trash": True}}, headers=alice.headers
    )
    assert bad_section.status_code == 422
    bad_device = client.get(f"{API}/devices/{'x' * 65}/ui-state", headers=alice.headers)
    assert bad_device.status_code == 404  # not a device id: a URL that names nothing
    with rt.db.session() as db:
        db.get_one(DeviceUiState, (alice.user_id, "laptop-1")).state = '{"sections": [1], "fo'
    state = client.get(laptop, headers=alice.headers).get_json()
    assert state["sections_collapsed"] == {"folders": False, "chats": False}
    assert state["folders_collapsed"] == {home: True, new: True}
