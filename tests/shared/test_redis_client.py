"""The runtime's Redis client waits for a free connection instead of failing.

A gevent worker holds thousands of requests at once, each taking a connection for a moment;
redis-py's default pool raised "Too many connections" past its cap (503s at 200 chatting
users in bench_connections, and a turn's lock release failing at 1,000)."""

from __future__ import annotations

import threading

import pytest

import shared.runtime
from shared.runtime import redis_client
from tests.conftest import OwnRedis


def test_a_request_beyond_the_pool_waits_for_a_connection_and_gets_it(
    own_redis: OwnRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared.runtime, "REDIS_CONNECTIONS", 2)
    client = redis_client(f"redis://127.0.0.1:{own_redis.port}/0")
    pool = client.connection_pool
    held = [pool.get_connection(), pool.get_connection()]  # every connection in use
    answered: list[object] = []
    waiting = threading.Thread(target=lambda: answered.append(client.ping()))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # it waits, it does not fail
    assert not answered
    pool.release(held.pop())
    waiting.join(5)
    assert answered == [True]
    pool.release(held.pop())
    client.close()
