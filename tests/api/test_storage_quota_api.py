"""Storage quotas (issue 38): what a user stores (/me/usage), forks that share their images,
and writes refused past the quota while reading and freeing space still work."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from PIL import Image

from tests.api.conftest import API, Chat
from tests.conftest import Account, create_account, stored
from tests.fake_llm import text


def noise_png(side: int = 96) -> bytes:
    """A PNG of random pixels: it does not compress (about 27 KiB), and no two are alike."""
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(out, "PNG")
    return out.getvalue()


def data_url(data: bytes) -> dict[str, Any]:
    url = f"data:image/png;base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}


def disk_bytes(path: Path) -> int:
    """What `du -b` counts of the files under `path`: each file (inode) once, apparent size."""
    seen: dict[tuple[int, int], int] = {}
    for folder, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            seen[(info.st_dev, info.st_ino)] = info.st_size
    return sum(seen.values())


def user_dir(chat: Chat, user: Account | None = None) -> Path:
    return chat.rt.store.users_dir / (user or chat.user).user_id


def usage(chat: Chat, user: Account | None = None, **query: str) -> dict[str, Any]:
    response = chat.client.get(
        f"{API}/me/usage", query_string=query, headers=(user or chat.user).headers
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["storage"]


def session_with_images(chat: Chat, count: int = 8) -> tuple[str, list[bytes]]:
    session_id = chat.new_session()
    images = [noise_png() for _ in range(count)]
    chat.llm.script(text("Eight pictures of noise."))
    response = chat.turn(
        session_id, content=[{"type": "text", "text": "Look at these"}, *map(data_url, images)]
    )
    assert response.status_code == 200, response.get_json()
    return session_id, images


def fork(chat: Chat, session_id: str, user: Account | None = None):  # type: ignore[no-untyped-def]
    return chat.client.post(
        f"{API}/sessions/{session_id}/fork", json={}, headers=(user or chat.user).headers
    )


def set_quota(chat: Chat, user: Account, quota: int | None) -> dict[str, Any]:
    admin = create_account(chat.rt, f"root{os.urandom(3).hex()}", admin=True)
    response = chat.client.patch(
        f"{API}/users/{user.user_id}", json={"storage_quota_bytes": quota}, headers=admin.headers
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_me_usage_shows_what_the_user_stores_and_their_quota(
    client: FlaskClient, alice: Account
) -> None:
    response = client.get(f"{API}/me/usage", headers=alice.headers)
    assert response.status_code == 200
    storage = response.get_json()["storage"]
    assert storage["used_bytes"] == 0
    assert storage["quota_bytes"] == 5 * 1024**3  # STORAGE_QUOTA_BYTES' default
    assert set(storage["by_kind"]) == {
        "sessions",
        "images",
        "trash",
        "memory",
        "memory_backups",
        "other",
        "shares",
    }
    created = client.post(f"{API}/sessions", json={"title": "notes"}, headers=alice.headers)
    assert created.status_code == 201
    storage = client.get(f"{API}/me/usage", headers=alice.headers).get_json()["storage"]
    assert storage["used_bytes"] == storage["by_kind"]["sessions"] > 0


def test_a_fork_stores_its_transcript_only_and_shares_the_images(chat: Chat) -> None:
    session_id, images = session_with_images(chat)
    before = disk_bytes(chat.rt.settings.data_dir)
    response = fork(chat, session_id)
    assert response.status_code == 201, response.get_json()
    copy = response.get_json()["id"]
    grown = disk_bytes(chat.rt.settings.data_dir) - before
    transcript = chat.rt.store.path(chat.user.user_id, copy).stat().st_size
    assert grown == transcript  # was: the transcript and a copy of every image
    assert sum(map(len, images)) > 8 * 20_000 > 10 * transcript

    # Deleting the original leaves the fork's images in place.
    purged = chat.client.delete(
        f"{API}/sessions/{session_id}?purge=true", headers=chat.user.headers
    )
    assert purged.status_code == 204
    names = chat.client.get(f"{API}/sessions/{copy}/messages", headers=chat.user.headers)
    first = names.get_json()["items"][0]["images"]
    assert len(first) == 8
    served = chat.client.get(f"{API}/sessions/{copy}/images/{first[0]}", headers=chat.user.headers)
    assert served.status_code == 200
    assert served.data in images


def test_usage_counts_what_du_counts_each_linked_file_once(chat: Chat) -> None:
    session_id, images = session_with_images(chat)
    assert fork(chat, session_id).status_code == 201
    trashed = chat.new_session()
    chat.llm.script(text("ok"))
    assert chat.turn(trashed, content="to the trash").status_code == 200
    chat.client.delete(f"{API}/sessions/{trashed}", headers=chat.user.headers)
    chat.client.put(
        f"{API}/memory/user", json={"content": "- likes noise"}, headers=chat.user.headers
    )
    storage = usage(chat, fresh="true")
    on_disk = disk_bytes(user_dir(chat))
    assert storage["used_bytes"] == on_disk
    kinds = storage["by_kind"]
    assert kinds["images"] == sum(map(len, images))  # counted once, not once per session
    assert kinds["trash"] == chat.rt.store.path(chat.user.user_id, trashed).stat().st_size
    assert kinds["memory"] > 0
    # The running figure (kept as writes happen) agrees with the fresh measurement.
    chat.rt.store.usage.forget(chat.user.user_id)
    assert usage(chat)["used_bytes"] == on_disk


def test_a_turn_with_images_past_the_quota_is_refused_with_the_figures(chat: Chat) -> None:
    session_id, images = session_with_images(chat, count=2)
    used = usage(chat)["used_bytes"]
    assert used == disk_bytes(user_dir(chat))  # the running figure followed the writes
    set_quota(chat, chat.user, used + 1000)
    before = stored(chat.rt)
    picture = noise_png()
    response = chat.turn(
        session_id, content=[{"type": "text", "text": "one more"}, data_url(picture)]
    )
    assert response.status_code == 507
    error = response.get_json()["error"]
    assert error["code"] == "quota_exceeded"
    assert error["details"] == {
        "used_bytes": used,
        "quota_bytes": used + 1000,
        "request_bytes": len("one more") + len(picture),
    }
    assert stored(chat.rt) == before  # nothing was written

    # A single request larger than the whole quota: 413, with the same figures.
    set_quota(chat, chat.user, 1000)
    response = chat.turn(session_id, content=[data_url(picture)])
    assert response.status_code == 413
    assert response.get_json()["error"]["details"]["request_bytes"] == len(picture)


def test_an_import_and_a_fork_past_the_quota_are_refused(chat: Chat) -> None:
    session_id, _ = session_with_images(chat, count=3)
    bundle = chat.client.get(f"{API}/sessions/{session_id}/export", headers=chat.user.headers).data
    used = usage(chat)["used_bytes"]
    set_quota(chat, chat.user, used + 100)
    imported = chat.client.post(
        f"{API}/sessions/import",
        data=bundle,
        content_type="application/zip",
        headers=chat.user.headers,
    )
    assert imported.status_code == 507, imported.get_json()
    details = imported.get_json()["error"]["details"]
    assert details["used_bytes"] == used
    assert details["quota_bytes"] == used + 100
    assert details["request_bytes"] > 3 * 20_000  # the images it would unpack

    forked = fork(chat, session_id)
    assert forked.status_code == 507, forked.get_json()
    assert forked.get_json()["error"]["details"]["request_bytes"] < 5_000  # no image copies


def test_over_quota_a_user_still_reads_and_frees_space_and_others_are_unaffected(
    chat: Chat,
) -> None:
    first, _ = session_with_images(chat, count=4)
    second, _ = session_with_images(chat, count=1)
    set_quota(chat, chat.user, 10_000)  # already far past it
    headers = chat.user.headers
    assert chat.turn(second, content="hello").status_code == 507
    assert chat.client.get(f"{API}/sessions/{first}/messages", headers=headers).status_code == 200

    bob = create_account(chat.rt, "bob")
    other = chat.client.post(f"{API}/sessions", json={}, headers=bob.headers).get_json()["id"]
    chat.llm.script(text("hi bob"))
    assert (
        chat.client.post(
            f"{API}/sessions/{other}/turns", json={"content": "hi"}, headers=bob.headers
        ).status_code
        == 200
    )

    # To the trash, then emptied: the space is freed and writing works again.
    assert chat.client.delete(f"{API}/sessions/{first}", headers=headers).status_code == 204
    assert usage(chat)["by_kind"]["trash"] > 4 * 20_000
    purged = chat.client.delete(f"{API}/sessions/{first}?purge=true", headers=headers)
    assert purged.status_code == 204
    assert (
        chat.client.delete(f"{API}/sessions/{second}?purge=true", headers=headers).status_code
        == 204
    )
    assert usage(chat)["used_bytes"] == disk_bytes(user_dir(chat)) < 10_000
    fresh = chat.new_session()
    chat.llm.script(text("room again"))
    assert chat.turn(fresh, content="hello again").status_code == 200


def test_a_share_counts_its_snapshot_against_the_quota_until_revoked_or_deleted(
    chat: Chat,
) -> None:
    """A share stores a copy of the conversation: one user could fill the disk with them."""
    headers = chat.user.headers

    def long_chat(word: str) -> str:
        session_id = chat.new_session()
        chat.llm.script(text(f"{word} " * 5_000))  # 30 KB of answer
        assert chat.turn(session_id, content=f"Say {word} a lot").status_code == 200
        return session_id

    def share(session_id: str):  # type: ignore[no-untyped-def]
        return chat.client.post(f"{API}/sessions/{session_id}/share", headers=headers)

    first, second = long_chat("alpha"), long_chat("bravo")
    before = usage(chat)
    assert before["by_kind"]["shares"] == 0
    assert share(first).status_code == 201
    after = usage(chat)
    assert after["by_kind"]["shares"] > 30_000
    assert after["used_bytes"] == before["used_bytes"] + after["by_kind"]["shares"]
    assert usage(chat, fresh="true") == after  # measured again, the same figure

    set_quota(chat, chat.user, after["used_bytes"] + 1_000)
    refused = share(second)
    assert refused.status_code == 507, refused.get_json()
    assert refused.get_json()["error"]["code"] == "quota_exceeded"
    assert refused.get_json()["error"]["details"]["request_bytes"] > 30_000
    unshared = chat.client.get(f"{API}/sessions/{second}/share", headers=headers)
    assert unshared.status_code == 404  # no link was made

    revoked = chat.client.delete(f"{API}/sessions/{first}/share", headers=headers)
    assert revoked.status_code == 204
    assert usage(chat)["by_kind"]["shares"] == 0
    assert share(second).status_code == 201  # the room the first share took is free
    assert usage(chat)["by_kind"]["shares"] > 30_000

    assert chat.client.delete(f"{API}/sessions/{second}", headers=headers).status_code == 204
    assert usage(chat)["by_kind"]["shares"] == 0


def test_an_admin_sets_a_users_quota_and_sees_everyones_usage(chat: Chat) -> None:
    admin = create_account(chat.rt, "root", admin=True)
    url = f"{API}/users/{chat.user.user_id}"
    changed = chat.client.patch(url, json={"storage_quota_bytes": 123_456}, headers=admin.headers)
    assert changed.status_code == 200
    assert changed.get_json()["storage_quota_bytes"] == 123_456
    assert usage(chat)["quota_bytes"] == 123_456
    listed = chat.client.get(f"{API}/usage/users", headers=admin.headers).get_json()
    mine = next(u for u in listed if u["user_id"] == chat.user.user_id)
    assert mine["storage"]["quota_bytes"] == 123_456

    refused = chat.client.patch(url, json={"storage_quota_bytes": -1}, headers=admin.headers)
    assert refused.status_code == 422
    by_user = chat.client.patch(url, json={"storage_quota_bytes": 0}, headers=chat.user.headers)
    assert by_user.status_code == 403
    assert chat.client.get(f"{API}/usage/users", headers=chat.user.headers).status_code == 403

    back = chat.client.patch(url, json={"storage_quota_bytes": None}, headers=admin.headers)
    assert back.get_json()["storage_quota_bytes"] is None
    assert usage(chat)["quota_bytes"] == 5 * 1024**3
