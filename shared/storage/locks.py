"""Named locks that hold across processes (and hosts, with Redis).

With Redis configured, a redis-py `Lock` (with an expiry, so a crashed holder cannot block
forever); otherwise a `filelock.FileLock` under DATA_DIR/locks. Both are used the same way:

    with locks.hold("session:<id>"):
        ...
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

import filelock
import redis

from shared.core.errors import Conflict, Unavailable


class Locks(Protocol):
    def hold(
        self, name: str, *, wait: float = 10.0, ttl: float = 60.0
    ) -> AbstractContextManager[None]: ...


class RedisLocks:
    def __init__(self, client: redis.Redis, prefix: str = "eonyx:lock:") -> None:
        self.client = client
        self.prefix = prefix

    @contextmanager
    def hold(self, name: str, *, wait: float = 10.0, ttl: float = 60.0) -> Iterator[None]:
        lock = self.client.lock(self.prefix + name, timeout=ttl, blocking_timeout=wait)
        try:
            acquired = lock.acquire()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise Unavailable(f"Redis cannot be reached for a lock ({exc})") from exc
        if not acquired:
            raise Conflict(f"{name} is busy; try again", code="busy")
        try:
            yield
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                pass  # expired while held; the holder's work is guarded by version checks


class FileLocks:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @contextmanager
    def hold(self, name: str, *, wait: float = 10.0, ttl: float = 60.0) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(name.encode()).hexdigest()[:32]
        lock = filelock.FileLock(str(self.directory / f"{digest}.lock"), timeout=wait)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise Conflict(f"{name} is busy; try again", code="busy") from None
        try:
            yield
        finally:
            lock.release()
