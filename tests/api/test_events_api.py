"""The events WebSocket on a live server: it re-checks its token while open, and closes when
the token is revoked or the server's Redis goes away."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from flask import Flask
from simple_websocket import Client as WebSocket
from simple_websocket import ConnectionClosed
from werkzeug.serving import make_server

import api.events
from shared import accounts
from shared.storage import events
from shared.storage.embedded_redis import EmbeddedRedis
from tests.api.conftest import API, Chat

WAIT = 10.0  # seconds a closed socket may take to notice (many times the rechecks below)


@pytest.fixture(autouse=True)
def quick_rechecks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.events, "RECHECK_SECONDS", 0.3)
    monkeypatch.setattr(api.events, "POLL_SECONDS", 0.1)


@contextmanager
def live(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{server.port}{API}/events"
    finally:
        server.shutdown()
        server.server_close()


def messages_until_closed(ws: WebSocket, timeout: float = WAIT) -> tuple[list[dict], int]:
    """What the socket sends until it closes, and its close code; fails past `timeout`."""
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = ws.receive(0.2)
        except ConnectionClosed as closed:
            return seen, closed.reason
        if data is not None:
            seen.append(json.loads(data))
    ws.close()
    pytest.fail(f"the socket was still open after {timeout:.0f} s; it sent {seen}")


def test_a_valid_token_keeps_the_socket_open_across_rechecks(chat: Chat) -> None:
    with live(chat.app) as url:
        ws = WebSocket.connect(url, headers={"Authorization": f"Bearer {chat.user.token}"})
        try:
            assert json.loads(ws.receive(5)) == {"type": "ready"}
            time.sleep(1.0)  # several rechecks
            assert ws.connected
            chat.client.put(
                f"{API}/memory/user", json={"content": "- hi\n"}, headers=chat.user.headers
            )
            assert json.loads(ws.receive(5))["type"] == "memory.updated"
        finally:
            ws.close()


def test_a_revoked_token_closes_the_socket_with_1008(chat: Chat) -> None:
    with chat.rt.db.session() as db:
        principal = accounts.authenticate(db, chat.user.token)
        _, key = accounts.create_api_key(db, principal, "browser")
    with live(chat.app) as url:
        ws = WebSocket.connect(f"{url}?token={key}")
        assert json.loads(ws.receive(5)) == {"type": "ready"}
        with chat.rt.db.session() as db:
            token_id = accounts.authenticate(db, key).token_id
        revoked = chat.client.delete(f"{API}/tokens/{token_id}", headers=chat.user.headers)
        assert revoked.status_code == 204
        seen, code = messages_until_closed(ws)
        assert code == api.events.POLICY_VIOLATION
        assert [m["error"]["code"] for m in seen if m["type"] == "error"] in ([], ["invalid_token"])

        # The login token itself, revoked in the database directly (a logout elsewhere).
        ws = WebSocket.connect(f"{url}?token={chat.user.token}")
        assert json.loads(ws.receive(5)) == {"type": "ready"}
        with chat.rt.db.session() as db:
            accounts.revoke_token(db, principal, principal.token_id)
        assert messages_until_closed(ws)[1] == api.events.POLICY_VIOLATION


def test_an_expired_token_closes_the_socket(chat: Chat, monkeypatch: pytest.MonkeyPatch) -> None:
    with live(chat.app) as url:
        ws = WebSocket.connect(f"{url}?token={chat.user.token}")
        assert json.loads(ws.receive(5)) == {"type": "ready"}
        later = accounts.now() + timedelta(days=2)
        monkeypatch.setattr(accounts, "now", lambda: later)
        assert messages_until_closed(ws)[1] == api.events.POLICY_VIOLATION


def test_the_socket_closes_when_the_servers_redis_goes_away(
    make_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    own = EmbeddedRedis(tmp_path / "own-redis")
    chat = make_chat(REDIS_URL=own.start())
    try:
        with live(chat.app) as url:
            ws = WebSocket.connect(f"{url}?token={chat.user.token}")
            assert json.loads(ws.receive(5)) == {"type": "ready"}
            own.stop()
            seen, code = messages_until_closed(ws)
            assert code == api.events.INTERNAL_ERROR
            assert [m["error"]["code"] for m in seen] in ([], ["events_unavailable"])
    finally:
        own.stop()


def test_a_stream_whose_redis_is_gone_before_it_starts_just_ends() -> None:
    gone = redis.Redis(unix_socket_path="/nonexistent/redis.sock")
    assert list(events.listen(gone, "u" * 32)) == []
