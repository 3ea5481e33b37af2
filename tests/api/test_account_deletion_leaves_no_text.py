"""A deleted account's messages leave no trace in SQLite's files (issue 38, item 8): the
write-ahead log is checkpointed and truncated after the deletion, so their text does not
linger in `eonyx.db-wal` until SQLite reuses those frames."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.conftest import API, Chat
from tests.conftest import create_account


def test_a_deleted_accounts_text_is_in_no_byte_of_the_sqlite_files(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat()
    if not chat.rt.settings.database_url.startswith("sqlite"):
        pytest.skip("SQLite's write-ahead log; PostgreSQL's is its own to recycle")
    marker = f"Hunter2Secret{uuid.uuid4().hex[:12]}"
    session_id = chat.new_session()
    for n in range(3):
        reply = chat.turn(session_id, content=f"my VPN password is {marker} (turn {n})")
        assert reply.status_code == 200, reply.get_data(as_text=True)
    found = chat.client.get(
        f"{API}/sessions", query_string={"q": marker}, headers=chat.user.headers
    )
    assert found.status_code == 200
    assert found.get_json()["items"], "the text is indexed (in the database) before"
    database = Path(chat.rt.settings.database_url.removeprefix("sqlite:///"))
    files = [database, database.with_name(database.name + "-wal")]
    assert any(marker.encode() in path.read_bytes() for path in files)

    admin = create_account(chat.rt, "admin", admin=True)
    deleted = chat.client.delete(f"{API}/users/{chat.user.user_id}", headers=admin.headers)
    assert deleted.status_code == 204, deleted.get_data(as_text=True)

    wal = files[1]
    assert not wal.exists() or wal.stat().st_size == 0  # truncated
    for path in files:
        data = path.read_bytes() if path.exists() else b""
        assert marker.encode() not in data, f"{path.name} still holds the deleted text"
        assert marker.lower().encode() not in data, f"{path.name} still holds it (lower case)"
