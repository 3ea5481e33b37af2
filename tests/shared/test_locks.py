"""Named locks exclude each other across processes, with Redis and with files."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
import redis

from shared.core.errors import Conflict
from shared.storage.locks import FileLocks, Locks, RedisLocks
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
    with first.hold("x"):
        with pytest.raises(Conflict, match="busy"), second.hold("x", wait=0.2):
            pass
    with second.hold("x", wait=0.2):
        pass
