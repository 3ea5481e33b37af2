"""Named locks exclude each other across processes, with Redis and with files."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from shared.core.errors import Conflict
from shared.infra.locks import FileLocks, Locks, RedisLocks
from tests.conftest import Backend


def make_locks(kind: str, tmp_path: Path, backend: Backend) -> Locks:
    if kind == "redis":
        return RedisLocks(redis.Redis.from_url(backend.redis_url))
    return FileLocks(tmp_path / "locks")


def _count(kind: str, tmp_path: str, redis_url: str, counter: str, rounds: int) -> None:
    locks = make_locks(kind, Path(tmp_path), Backend("", "", redis_url))
    path = Path(counter)
    for _ in range(rounds):
        with locks.hold("counter", wait=30):
            value = int(path.read_text())
            time.sleep(0.001)  # widen the race window
            path.write_text(str(value + 1))


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_no_update_is_lost_across_processes(kind: str, tmp_path: Path, backend: Backend) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(
            target=_count, args=(kind, str(tmp_path), backend.redis_url, str(counter), 25)
        )
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert counter.read_text() == "100"


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_busy_lock_is_a_conflict_after_waiting(
    kind: str, tmp_path: Path, backend: Backend
) -> None:
    first = make_locks(kind, tmp_path, backend)
    second = make_locks(kind, tmp_path, backend)
    with first.hold("x"), pytest.raises(Conflict, match="busy"), second.hold("x", wait=0.2):
        pass
    with second.hold("x", wait=0.2):
        pass


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_kept_alive_lock_outlasts_its_ttl_while_held(
    kind: str, tmp_path: Path, backend: Backend
) -> None:
    holder = make_locks(kind, tmp_path, backend)
    other = make_locks(kind, tmp_path, backend)
    # Renewed every ttl/3: a lifetime of 2 s survives a renewal thread held up for over a
    # second by a loaded machine, which 0.6 s (renewed every 0.2 s) did not.
    with holder.hold("job", ttl=2.0, keepalive=True):
        time.sleep(5.0)  # two and a half lifetimes
        with pytest.raises(Conflict), other.hold("job", wait=0):
            pass
    with other.hold("job", wait=0):
        pass


def _hold_and_report(kind: str, tmp_path: str, redis_url: str, ready: Any) -> None:
    locks = make_locks(kind, Path(tmp_path), Backend("", "", redis_url))
    with locks.hold("job", ttl=1.0, keepalive=True):
        ready.set()
        time.sleep(60)  # until killed


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_holder_that_dies_lets_go_within_the_ttl(
    kind: str, tmp_path: Path, backend: Backend
) -> None:
    """A worker killed mid-job must not block the job's redo for the old, long lifetime."""
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    child = context.Process(
        target=_hold_and_report, args=(kind, str(tmp_path), backend.redis_url, ready)
    )
    child.start()
    try:
        assert ready.wait(30)
        locks = make_locks(kind, tmp_path, backend)
        with pytest.raises(Conflict), locks.hold("job", wait=0):
            pass
    finally:
        child.kill()
        child.join(10)
    with locks.hold("job", wait=3):  # the Redis lock expires one ttl after the last renewal
        pass


def test_a_released_lock_stops_its_renewal(backend: Backend) -> None:
    """Every turn keeps its lock alive: one thread renews them all, so a replica does not
    start a thread per turn, and a released lock is free at once, not one TTL later."""
    client = redis.Redis.from_url(backend.redis_url)
    locks = RedisLocks(client)
    threads_before = threading.active_count()
    with locks.hold("job", ttl=0.3, keepalive=True):
        time.sleep(0.5)  # renewed every 0.1 s: alive past its TTL
        assert client.pttl("eonyx:lock:job") > 0
    assert client.exists("eonyx:lock:job") == 0
    for turn in range(50):
        with locks.hold(f"turn {turn}", ttl=0.3, keepalive=True):
            pass
    assert threading.active_count() <= threads_before + 1  # the one renewal thread
    with RedisLocks(client).hold("job", wait=0):
        pass
    time.sleep(0.4)  # past the renewal that was due: a released lock is not brought back
    assert client.exists("eonyx:lock:job") == 0
    client.close()


def test_one_thread_keeps_several_locks_alive(backend: Backend) -> None:
    """Locks of different lifetimes held at once each outlive their TTL while held: the
    short one, taken while the thread sleeps until the long one's renewal, wakes it."""
    client = redis.Redis.from_url(backend.redis_url)
    locks = RedisLocks(client)
    with locks.hold("long", ttl=3.0, keepalive=True), locks.hold("short", ttl=0.3, keepalive=True):
        time.sleep(1.5)
        assert client.pttl("eonyx:lock:short") > 0
        assert client.pttl("eonyx:lock:long") > 0
    assert client.exists("eonyx:lock:short", "eonyx:lock:long") == 0
    client.close()
