"""The memory store: the guarded write pipeline, concurrency, stale writers, identity."""

from __future__ import annotations

import errno
import multiprocessing
import threading
import time
from pathlib import Path

import pytest
import redis

from shared.core.errors import StorageError
from shared.core.settings import Settings
from shared.infra.locks import FileLocks, RedisLocks
from shared.memory import files as memory_module
from shared.memory.files import (
    DEFAULT_IDENTITY,
    MemoryRefused,
    MemoryStore,
    StaleVersion,
    usage_line,
)
from shared.runtime import Runtime
from tests.conftest import Backend, make_settings

USER = "b" * 32


def store_for(settings: Settings, backend: Backend, kind: str, **options: float) -> MemoryStore:
    locks = (
        RedisLocks(redis.Redis.from_url(backend.redis_url))
        if kind == "redis"
        else FileLocks(settings.data_dir / "locks")
    )
    return MemoryStore(settings, locks, **options)


def add(entry: str):  # type: ignore[no-untyped-def]
    return lambda entries: [*entries, entry]


def test_usage_line_reads_like_the_spec() -> None:
    assert usage_line(1474, 2200) == "67% — 1,474/2,200 chars"


def test_a_write_backs_up_the_previous_file_first(settings: Settings, backend: Backend) -> None:
    store = store_for(settings, backend, "file")
    store.update("agent", USER, add("uses pnpm"))
    assert store.backups("agent", USER) == []  # there was no file to keep
    store.update("agent", USER, add("tests: uv run pytest"))
    store.update("agent", USER, lambda e: e[1:])
    backups = store.backups("agent", USER)
    assert len(backups) == 2
    contents = {(store.backups_dir("agent", USER) / b).read_text() for b in backups}
    assert contents == {"- uses pnpm\n", "- uses pnpm\n- tests: uv run pytest\n"}
    assert store.read("agent", USER).content == "- tests: uv run pytest\n"


def test_over_the_cap_is_refused_with_counts_never_truncated(
    tmp_path: Path, backend: Backend
) -> None:
    settings = make_settings(tmp_path / "d", backend, MEMORY_CHAR_LIMIT="40")
    store = store_for(settings, backend, "file")
    store.update("agent", USER, add("short fact"))
    before = store.path("agent", USER).read_bytes()
    with pytest.raises(MemoryRefused) as refused:
        store.update("agent", USER, add("a much longer fact that will not fit here"))
    assert "over its limit of 40" in refused.value.message
    assert "57 characters" in refused.value.message
    assert store.path("agent", USER).read_bytes() == before


def test_a_stale_view_cannot_overwrite_a_newer_file(settings: Settings, backend: Backend) -> None:
    store = store_for(settings, backend, "redis")
    store.update("user", USER, add("answer in English"))
    seen = store.read("user", USER)
    store.update("user", USER, add("be concise"))  # someone else, meanwhile
    with pytest.raises(StaleVersion):
        store.write_if_unchanged("user", USER, "- answer in German\n", seen.version)
    assert store.read("user", USER).entries == ["answer in English", "be concise"]


def test_a_writer_whose_redis_lock_expired_cannot_overwrite(
    settings: Settings, backend: Backend
) -> None:
    slow = store_for(settings, backend, "redis", lock_ttl=0.3)
    fast = store_for(settings, backend, "redis")
    failures: list[BaseException] = []

    def stall(entries: list[str]) -> list[str]:
        time.sleep(0.8)  # the lock expires while this writer thinks
        return [*entries, "from the slow writer"]

    def slow_writer() -> None:
        try:
            slow.update("agent", USER, stall)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    thread = threading.Thread(target=slow_writer)
    thread.start()
    time.sleep(0.5)
    fast.update("agent", USER, add("from the fast writer"))  # gets the expired lock
    thread.join(10)
    assert len(failures) == 1
    assert isinstance(failures[0], StaleVersion)
    assert fast.read("agent", USER).entries == ["from the fast writer"]


def _write_entries(data_dir: str, db_url: str, redis_url: str, kind: str, worker: int) -> None:
    settings = make_settings(Path(data_dir), Backend("", db_url, redis_url))
    store = store_for(settings, Backend("", db_url, redis_url), kind)
    for n in range(5):
        store.update("agent", USER, add(f"fact {worker}.{n}"))


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_20_concurrent_writers_in_several_processes_lose_no_entry(
    settings: Settings, backend: Backend, kind: str
) -> None:
    context = multiprocessing.get_context("spawn")
    args = (str(settings.data_dir), backend.database_url, backend.redis_url, kind)
    processes = [context.Process(target=_write_entries, args=(*args, w)) for w in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    entries = store_for(settings, backend, kind).read("agent", USER).entries
    assert sorted(entries) == sorted(f"fact {w}.{n}" for w in range(4) for n in range(5))


def test_identity_is_regenerated_when_deleted(settings: Settings) -> None:
    with Runtime.build(settings) as rt:
        path = rt.memory.path("identity", None)
        assert rt.identity == DEFAULT_IDENTITY
        assert path.read_text() == DEFAULT_IDENTITY
        path.write_text("You are Quill, a terse assistant.")
    with Runtime.build(settings) as rt:
        assert rt.identity == "You are Quill, a terse assistant."
        path.unlink()
    with Runtime.build(settings) as rt:
        assert rt.identity == DEFAULT_IDENTITY
        assert path.exists()


def test_a_read_only_store_falls_back_to_the_built_in_identity(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(path: Path, data: bytes) -> None:
        raise StorageError(f"could not save {path.name}: {errno.errorcode[errno.EROFS]}")

    monkeypatch.setattr(memory_module, "atomic_write", read_only)
    with Runtime.build(settings) as rt:
        assert rt.identity == DEFAULT_IDENTITY
        assert not rt.memory.path("identity", None).exists()
