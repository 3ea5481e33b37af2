"""Heartbeats in Redis: how /readyz knows that a worker and the beat scheduler are alive.

Each worker process and each beat keeps a key `eonyx:heartbeat:<role>:<name>` that expires
TTL seconds after its last beat (a thread renews it every INTERVAL), and lists its name in
the set `eonyx:heartbeats:<role>`. A process that stops deletes its key; one that is killed
lets it expire. `alive` reads one set and its keys, never a scan of the whole keyspace.
"""

from __future__ import annotations

import logging
import threading

import redis

from shared.core import registry

log = logging.getLogger(__name__)

INTERVAL = 10.0
TTL = 30  # three missed beats: a process is gone, not merely busy
WORKER, BEAT = "worker", "beat"


def _key(role: str, name: str) -> str:
    return f"{registry.HEARTBEAT}{role}:{name}"


def _members(role: str) -> str:
    return registry.HEARTBEATS + role


def beat(client: redis.Redis, role: str, name: str, ttl: int = TTL) -> None:
    """Say once that `name` is alive in `role`, for the next `ttl` seconds."""
    with client.pipeline() as pipe:
        pipe.set(_key(role, name), 1, ex=ttl)
        pipe.sadd(_members(role), name)
        pipe.execute()


def forget(client: redis.Redis, role: str, name: str) -> None:
    """A process that stops cleanly says so at once (instead of expiring TTL seconds later)."""
    with client.pipeline() as pipe:
        pipe.delete(_key(role, name))
        pipe.srem(_members(role), name)
        pipe.execute()


def alive(client: redis.Redis, role: str) -> list[str]:
    """The names in `role` whose heartbeat has not expired (and drops the expired ones)."""
    raw: set[bytes | str] = client.smembers(_members(role))
    names = sorted(n.decode() if isinstance(n, bytes) else n for n in raw)
    if not names:
        return []
    with client.pipeline() as pipe:
        for name in names:
            pipe.exists(_key(role, name))
        found = pipe.execute()
    dead = [name for name, exists in zip(names, found, strict=True) if not exists]
    if dead:
        client.srem(_members(role), *dead)
    return [name for name, exists in zip(names, found, strict=True) if exists]


class Heartbeat:
    """A daemon thread that beats for one process until `stop()`."""

    def __init__(self, client: redis.Redis, role: str, name: str) -> None:
        self.client, self.role, self.name = client, role, name
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {role}", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            try:
                beat(self.client, self.role, self.name)
            except redis.RedisError as exc:  # Redis away for a moment: /readyz says so too
                log.warning("heartbeat of %s %s not sent: %s", self.role, self.name, exc)
            if self._stopped.wait(INTERVAL):
                return

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        try:
            forget(self.client, self.role, self.name)
        except redis.RedisError as exc:
            log.warning("heartbeat of %s %s not removed: %s", self.role, self.name, exc)
