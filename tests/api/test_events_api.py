"""The events WebSocket on a live server: ready only once subscribed, re-checks its token
while open, and closes with 1011 (never a 500) when the server's Redis is or goes away."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

import api.events
from shared.accounts import people
from shared.core import registry
from shared.core.clock import utcnow
from shared.infra import change_listener, event_bus
from shared.infra.embedded_redis import EmbeddedRedis
from tests.api.conftest import API, Chat
from tests.api.websockets import connect, live, publish_raw
from tests.conftest import MovedClock, wait_for

LOOPS = 50


@pytest.fixture(autouse=True)
def quick_rechecks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.events, "RECHECK_SECONDS", 0.3)
    # A Redis that comes back is heard again within a tenth of a second, not a second.
    monkeypatch.setattr(change_listener, "RESUBSCRIBE_SECONDS", 0.1)


def test_a_valid_token_keeps_the_socket_open_across_rechecks(chat: Chat) -> None:
    with live(chat.app) as url:
        ws = connect(url, headers={"Authorization": f"Bearer {chat.user.token}"})
        try:
            assert ws.next_json() == {"type": "ready"}
            time.sleep(1.0)  # several rechecks
            assert ws.connected
            chat.client.put(
                f"{API}/memory/user", json={"content": "- hi\n"}, headers=chat.user.headers
            )
            assert ws.next_json()["type"] == "memory.updated"
        finally:
            ws.hang_up()


def test_an_event_published_right_after_ready_arrives(chat: Chat) -> None:
    """ "ready" means subscribed: an event published the instant it arrives is not lost."""
    with live(chat.app) as url:
        for number in range(LOOPS):
            ws = connect(f"{url}?token={chat.user.token}")
            try:
                assert ws.next_json() == {"type": "ready"}
                event = {"type": "session.title", "session_id": "s", "n": number}
                publish_raw(chat.rt.redis, chat.user.user_id, event)
                assert ws.next_json() == event
            finally:
                ws.hang_up()


def test_a_revoked_token_closes_the_socket_with_1008(chat: Chat) -> None:
    principal = people.authenticate(chat.rt.db, chat.rt.tokens, chat.user.token, now=utcnow())
    with chat.rt.db.session() as db:
        _, key = people.create_api_key(db, principal, "browser")
    with live(chat.app) as url:
        ws = connect(f"{url}?token={key}")
        assert ws.next_json() == {"type": "ready"}
        token_id = people.authenticate(chat.rt.db, chat.rt.tokens, key, now=utcnow()).token_id
        revoked = chat.client.delete(f"{API}/tokens/{token_id}", headers=chat.user.headers)
        assert revoked.status_code == 204
        seen, code = ws.until_closed()
        assert code == api.events.POLICY_VIOLATION
        assert [m["error"]["code"] for m in seen if m["type"] == "error"] == ["invalid_token"]

        # The login token itself, revoked in the database directly (a logout elsewhere).
        ws = connect(f"{url}?token={chat.user.token}")
        assert ws.next_json() == {"type": "ready"}
        with chat.rt.db.session() as db:
            people.revoke_token(db, principal, principal.token_id)
        assert ws.until_closed()[1] == api.events.POLICY_VIOLATION


def test_a_bad_token_is_told_why_and_closed_with_1008(chat: Chat) -> None:
    with live(chat.app) as url:
        for _ in range(LOOPS):
            seen, code = connect(f"{url}?token=nope").until_closed()
            assert code == api.events.POLICY_VIOLATION
            assert [m["error"]["code"] for m in seen] == ["invalid_token"]


def test_an_expired_token_closes_the_socket(chat: Chat) -> None:
    with live(chat.app) as url:
        ws = connect(f"{url}?token={chat.user.token}")
        assert ws.next_json() == {"type": "ready"}
        chat.rt.clock = MovedClock(timedelta(days=2))
        assert ws.until_closed()[1] == api.events.POLICY_VIOLATION


def test_the_socket_closes_when_the_servers_redis_goes_away(
    make_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    own = EmbeddedRedis(tmp_path / "own-redis")
    chat = make_chat(REDIS_URL=own.start())
    try:
        with live(chat.app) as url:
            ws = connect(f"{url}?token={chat.user.token}")
            assert ws.next_json() == {"type": "ready"}  # subscribed: the stream is running
            own.stop()
            seen, code = ws.until_closed()
            assert code == api.events.INTERNAL_ERROR
            assert [m["error"]["code"] for m in seen] == ["events_unavailable"]
    finally:
        own.stop()


def test_a_socket_opened_while_redis_is_away_closes_with_1011(
    make_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    own = EmbeddedRedis(tmp_path / "own-redis")
    chat = make_chat(REDIS_URL=own.start())
    own.stop()
    with live(chat.app) as url:
        for _ in range(LOOPS):
            seen, code = connect(f"{url}?token={chat.user.token}").until_closed()
            assert code == api.events.INTERNAL_ERROR
            assert [m["error"]["code"] for m in seen] == ["events_unavailable"]


def test_the_socket_lifecycle_fifty_times(make_chat: Callable[..., Chat], tmp_path: Path) -> None:
    """Open, ready, an event, Redis lost, 1011: fifty times over, each with a fresh Redis,
    so a race between the socket and the stream shows up here rather than once a month."""
    own = EmbeddedRedis(tmp_path / "own-redis")
    chat = make_chat(REDIS_URL=own.start())
    try:
        with live(chat.app) as url:
            for number in range(LOOPS):
                if number:
                    own.start()
                ws = connect(f"{url}?token={chat.user.token}")
                assert ws.next_json() == {"type": "ready"}, number
                chat.rt.redis.publish(
                    event_bus.channel(chat.user.user_id), json.dumps({"type": "ping", "n": number})
                )
                assert ws.next_json() == {"type": "ping", "n": number}
                own.stop()
                seen, code = ws.until_closed()
                assert (code, [m["error"]["code"] for m in seen]) == (
                    api.events.INTERNAL_ERROR,
                    ["events_unavailable"],
                ), number
    finally:
        own.stop()


def test_open_sockets_are_capped_per_sign_in_and_per_user(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(EVENTS_SOCKETS_PER_USER="3", EVENTS_SOCKETS_PER_TOKEN="2")
    principal = people.authenticate(chat.rt.db, chat.rt.tokens, chat.user.token, now=utcnow())
    with chat.rt.db.session() as db:
        _, key = people.create_api_key(db, principal, "laptop")
    with live(chat.app) as url:
        tabs = [connect(f"{url}?token={chat.user.token}") for _ in range(2)]
        assert [ws.next_json() for ws in tabs] == [{"type": "ready"}] * 2
        seen, code = connect(f"{url}?token={chat.user.token}").until_closed()
        assert code == api.events.POLICY_VIOLATION
        assert [m["error"]["code"] for m in seen] == ["too_many_sockets"]
        assert "this sign-in has 2 live connections open" in seen[0]["error"]["message"]

        tabs.append(connect(f"{url}?token={key}"))  # another sign-in: the user's third
        assert tabs[-1].next_json() == {"type": "ready"}
        seen, code = connect(f"{url}?token={key}").until_closed()
        assert [m["error"]["code"] for m in seen] == ["too_many_sockets"]
        assert "you have 3 live connections open" in seen[0]["error"]["message"]

        # A closed tab frees its place at once, and the open ones still get their events.
        tabs.pop(0).hang_up()
        wait_for(
            lambda: chat.rt.redis.zcard(registry.SOCKETS_BY_USER + chat.user.user_id) == 2,
            5,
            "the release",
        )
        tabs.append(connect(f"{url}?token={chat.user.token}"))
        assert tabs[-1].next_json() == {"type": "ready"}
        publish_raw(chat.rt.redis, chat.user.user_id, {"type": "ping"})
        assert [ws.next_json() for ws in tabs] == [{"type": "ping"}] * 3
        for ws in tabs:
            ws.hang_up()


def test_a_stopping_server_closes_every_socket_with_1012(chat: Chat) -> None:
    with live(chat.app) as url:
        tabs = [connect(f"{url}?token={chat.user.token}") for _ in range(3)]
        assert [ws.next_json() for ws in tabs] == [{"type": "ready"}] * 3
        try:
            api.events.OPEN.close_all()
            for ws in tabs:
                seen, code = ws.until_closed()
                assert code == api.events.SERVICE_RESTART
                assert [m["error"]["code"] for m in seen] == ["server_restart"]
        finally:
            api.events.OPEN.closing = False
