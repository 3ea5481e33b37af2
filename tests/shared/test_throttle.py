"""The failure counters behind login throttling: in Redis (shared by every API process), or
in the process when there is no Redis or it is down."""

from __future__ import annotations

import redis

from shared.accounts.throttle import Policy, Throttle
from tests.conftest import Backend

POLICY = Policy(free=2, window=60, base=2, ceiling=10)


def test_the_backoff_doubles_up_to_its_ceiling() -> None:
    assert [POLICY.block_after(n) for n in range(1, 8)] == [0, 0, 2, 4, 8, 10, 10]


def test_redis_counters_are_shared_by_every_process(backend: Backend) -> None:
    client = redis.Redis.from_url(backend.redis_url)
    one, other = Throttle(client), Throttle(client)  # two API processes
    assert [one.fail("k", POLICY) for _ in range(2)] == [0, 0]
    assert other.fail("k", POLICY) == 2
    assert 1 <= one.blocked_for("k") <= 2
    assert other.blocked_for("someone else") == 0
    other.reset("k")
    assert one.blocked_for("k") == 0
    assert one.fail("k", POLICY) == 0
    client.close()


def test_without_redis_the_process_counts() -> None:
    throttle = Throttle(None)
    assert [throttle.fail("k", POLICY) for _ in range(4)] == [0, 0, 2, 4]
    assert 3 <= throttle.blocked_for("k") <= 4
    throttle.reset("k")
    assert throttle.blocked_for("k") == 0


def test_a_redis_outage_falls_back_to_the_process(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gone = redis.Redis(host="127.0.0.1", port=9)
    calls: list[str] = []
    real = gone.pttl
    monkeypatch.setattr(gone, "pttl", lambda key: calls.append(key) or real(key))
    throttle = Throttle(gone)
    assert throttle.blocked_for("k") == 0  # Redis refused: counted in the process from here
    assert [throttle.fail("k", POLICY) for _ in range(3)] == [0, 0, 2]
    assert throttle.blocked_for("k") >= 1
    assert len(calls) == 1  # not asked again while it is down
