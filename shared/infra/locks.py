"""Named locks that hold across processes (and hosts, with Redis).

With Redis configured, a redis-py `Lock` (with an expiry, so a crashed holder cannot block
forever); otherwise a `filelock.FileLock` under DATA_DIR/locks. Both are used the same way:

    with locks.hold("session:<id>"):
        ...

`ttl` is how long a Redis lock outlives a holder that died. A lock held around work of unknown
length (a job waiting on a model) passes `keepalive=True`: a thread renews it every third of
`ttl` while the holder lives, so `ttl` can be short and a job lost with its worker can be
redone soon after. A file lock needs neither: the kernel releases it when its holder dies.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

import filelock
import redis

from shared.core import registry
from shared.core.errors import Conflict, Unavailable

log = logging.getLogger(__name__)


class Locks(Protocol):
    def hold(
        self, name: str, *, wait: float = 10.0, ttl: float = 60.0, keepalive: bool = False
    ) -> AbstractContextManager[None]: ...


def _renew(lock: redis.lock.Lock, every: float, done: threading.Event) -> None:
    """Reset the lock's expiry every `every` seconds until `done` (the holder released it)."""
    while not done.wait(every):
        try:
            lock.reacquire()
        except redis.exceptions.LockError:
            log.warning(
                "lock %s expired while held; its work is guarded by version checks", lock.name
            )
            return
        except redis.exceptions.RedisError as exc:
            log.warning("cannot renew lock %s: %s", lock.name, exc)


class RedisLocks:
    def __init__(self, client: redis.Redis, prefix: str = registry.LOCKS) -> None:
        self.client = client
        self.prefix = prefix

    @contextmanager
    def hold(
        self, name: str, *, wait: float = 10.0, ttl: float = 60.0, keepalive: bool = False
    ) -> Iterator[None]:
        # Not thread-local: the renewing thread must see the holder's token.
        lock = self.client.lock(
            self.prefix + name, timeout=ttl, blocking_timeout=wait, thread_local=False
        )
        try:
            # Our own token: redis-py's default, uuid1, asks libuuid, which tries the uuidd
            # socket and then locks a clock file shared by every process, on each call.
            acquired = lock.acquire(token=secrets.token_hex(16))
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise Unavailable(f"Redis cannot be reached for a lock ({exc})") from exc
        if not acquired:
            raise Conflict(f"{name} is busy; try again", code="busy")
        renewer = None
        if keepalive:
            released = threading.Event()
            renewer = threading.Thread(
                target=_renew, args=(lock, ttl / 3, released), name=f"lock {name}", daemon=True
            )
            renewer.start()
        try:
            yield
        finally:
            if renewer is not None:
                released.set()
                renewer.join()  # no renewal may land after the release below
            # Expired while held: the holder's work is guarded by version checks.
            with contextlib.suppress(redis.exceptions.LockError):
                lock.release()


class FileLocks:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @contextmanager
    def hold(
        self, name: str, *, wait: float = 10.0, ttl: float = 60.0, keepalive: bool = False
    ) -> Iterator[None]:
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
