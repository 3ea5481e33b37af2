"""Failure counters with backoff, for attempts worth slowing down (logins).

A key (an account, a client address) may fail `free` times within `window` seconds; each
failure past that blocks the key for a backoff that doubles from `base` seconds up to
`ceiling`. While a key is blocked its attempts are refused without being tried, which is what
makes guessing slow and cheap to refuse. A failure is remembered for `window` seconds after
the latest one.

The counters live in Redis when there is one, so every API process and replica sees the same
counts. Without Redis (an app built with no REDIS_URL and no embedded Redis), or while Redis
cannot be reached, an in-process table stands in: the limits then hold per process, and a
warning says so. After a Redis error the table is used for RETRY_REDIS_AFTER seconds before
Redis is tried again, so an outage does not slow every login down.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

import redis

from shared.core import registry

log = logging.getLogger(__name__)
RETRY_REDIS_AFTER = 30.0


@dataclass(frozen=True)
class Policy:
    free: int  # failures allowed within `window` before any block
    window: int  # seconds a failure is remembered after the latest one
    base: int  # seconds of the first block
    ceiling: int  # seconds of the longest block

    def block_after(self, failures: int) -> int:
        """Seconds a key is blocked after its `failures`-th failure (0: not blocked)."""
        beyond = failures - self.free
        if beyond <= 0:
            return 0
        return min(self.ceiling, self.base << min(beyond - 1, 30))


class _Table:
    """The in-process stand-in: key -> (failures, forget at, blocked until), monotonic."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, tuple[int, float, float]] = {}

    def blocked_for(self, key: str) -> int:
        now = time.monotonic()
        with self._lock:
            _, _, until = self._rows.get(key, (0, 0.0, 0.0))
        return math.ceil(until - now) if until > now else 0

    def fail(self, key: str, policy: Policy) -> int:
        now = time.monotonic()
        with self._lock:
            failures, forget_at, until = self._rows.get(key, (0, 0.0, 0.0))
            failures = failures + 1 if forget_at > now else 1
            block = policy.block_after(failures)
            until = now + block if block else until
            self._rows[key] = (failures, now + policy.window, until)
            if len(self._rows) > 100_000:  # an address sweep: forget what has expired
                self._rows = {k: v for k, v in self._rows.items() if max(v[1], v[2]) > now}
        return block

    def reset(self, key: str) -> None:
        with self._lock:
            self._rows.pop(key, None)


class Throttle:
    """Failure counters per key, in Redis when there is one (see the module doc)."""

    def __init__(self, client: redis.Redis | None) -> None:
        self.client = client
        self._table = _Table()
        self._warned = False
        self._redis_down_until = 0.0

    def _redis(self) -> redis.Redis | None:
        if self.client is not None and time.monotonic() >= self._redis_down_until:
            return self.client
        return None

    def blocked_for(self, key: str) -> int:
        """Seconds until `key` may try again (0: now)."""
        client = self._redis()
        if client is not None:
            try:
                ttl = client.pttl(registry.THROTTLE_BLOCK + key)
                return math.ceil(ttl / 1000) if isinstance(ttl, int) and ttl > 0 else 0
            except redis.RedisError as exc:
                self._fallback(exc)
        elif self.client is None and not self._warned:
            self._warned = True
            log.warning("no Redis: login attempts are counted per process only")
        return self._table.blocked_for(key)

    def fail(self, key: str, policy: Policy) -> int:
        """Count a failure of `key`; the seconds of the block it starts (0: none)."""
        client = self._redis()
        if client is not None:
            try:
                pipe = client.pipeline()
                pipe.incr(registry.THROTTLE_FAILS + key)
                pipe.expire(registry.THROTTLE_FAILS + key, policy.window)
                failures = int(pipe.execute()[0])
                block = policy.block_after(failures)
                if block:
                    client.set(registry.THROTTLE_BLOCK + key, failures, ex=block)
                return block
            except redis.RedisError as exc:
                self._fallback(exc)
        return self._table.fail(key, policy)

    def reset(self, key: str) -> None:
        """Forget the failures of `key` (a success)."""
        client = self._redis()
        if client is not None:
            try:
                client.delete(registry.THROTTLE_FAILS + key, registry.THROTTLE_BLOCK + key)
                return
            except redis.RedisError as exc:
                self._fallback(exc)
        self._table.reset(key)

    def _fallback(self, exc: redis.RedisError) -> None:
        self._redis_down_until = time.monotonic() + RETRY_REDIS_AFTER
        log.warning(
            "Redis unavailable for login throttling (%s); counting in this process for %.0f s",
            exc,
            RETRY_REDIS_AFTER,
        )
