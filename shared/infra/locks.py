"""Named locks that hold across processes (and hosts, with Redis).

With Redis configured, a redis-py `Lock` (with an expiry, so a crashed holder cannot block
forever); otherwise a `filelock.FileLock` under DATA_DIR/locks. Both are used the same way:

    with locks.hold("session:<id>"):
        ...

`ttl` is how long a Redis lock outlives a holder that died. A lock held around work of unknown
length (a job waiting on a model) passes `keepalive=True`: the process's renewal thread renews
it every third of `ttl` while the holder holds it, so `ttl` can be short and a job lost with
its worker can be redone soon after. A file lock needs neither: the kernel releases it when its
holder dies.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
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


@dataclass
class _Held:
    lock: redis.lock.Lock
    every: float  # seconds between renewals
    due: float  # monotonic time of the next one


class _Renewals:
    """The locks a process keeps alive, renewed by one thread for all of them.

    A turn holds its lock with `keepalive`, so a thread per lock meant a thread started and
    joined on every turn. This thread sleeps until the next renewal is due, and a release only
    takes its lock off the list. A renewal that crosses a release does no harm: redis-py's
    reacquire only extends a lock that still holds its holder's token."""

    def __init__(self) -> None:
        self._held: dict[int, _Held] = {}
        self._changed = threading.Condition()
        self._pid = 0
        self._handles = itertools.count()
        self._wakes_at = -math.inf  # when the thread looks next (-inf: it is looking now)

    def add(self, lock: redis.lock.Lock, every: float) -> int:
        handle = next(self._handles)
        due = time.monotonic() + every
        with self._changed:
            self._held[handle] = _Held(lock, every, due)
            if self._pid != os.getpid():  # first use, or a forked child: no thread here yet
                self._pid, self._wakes_at = os.getpid(), -math.inf
                threading.Thread(target=self._run, name="lock renewals", daemon=True).start()
            elif due < self._wakes_at:  # sooner than it would look: wake it (not every turn)
                self._changed.notify()
        return handle

    def remove(self, handle: int) -> None:
        with self._changed:
            self._held.pop(handle, None)

    def _run(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                due = [(h, held) for h, held in self._held.items() if held.due <= now]
                if not due:
                    soonest = min((held.due for held in self._held.values()), default=None)
                    self._wakes_at = math.inf if soonest is None else soonest
                    self._changed.wait(None if soonest is None else soonest - now)
                    self._wakes_at = -math.inf
                    continue
                for _handle, held in due:
                    held.due = now + held.every
                self._changed.release()  # renew without blocking holders and releases
                try:
                    lost = [h for h, held in due if not _renewed(held.lock)]
                finally:
                    self._changed.acquire()
                for handle in lost:
                    gone = self._held.pop(handle, None)
                    if gone is not None:  # not released meanwhile: it was lost while held
                        log.warning(
                            "lock %s expired while held; its work is guarded by version checks",
                            gone.lock.name,
                        )


def _renewed(lock: redis.lock.Lock) -> bool:
    """Reset the lock's expiry; False when it no longer holds our token."""
    try:
        lock.reacquire()
    except redis.exceptions.LockError:
        return False
    except redis.exceptions.RedisError as exc:
        log.warning("cannot renew lock %s: %s", lock.name, exc)
    return True


class RedisLocks:
    def __init__(self, client: redis.Redis, prefix: str = registry.LOCKS) -> None:
        self.client = client
        self.prefix = prefix
        self._renewals = _Renewals()

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
        renewal = self._renewals.add(lock, ttl / 3) if keepalive else None
        try:
            yield
        finally:
            if renewal is not None:
                self._renewals.remove(renewal)
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
