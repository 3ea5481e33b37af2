"""The session cache never serves a stale state: what every load returns is what folding the
file from the start gives, whoever changed the file and however."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.core.errors import NotFound, StorageError
from shared.files import filestore
from shared.files.session_store import SessionState, SessionStore, fold

USER = "c" * 32
ROOT = Path(__file__).resolve().parents[2]


def message(text: str, role: str = "user", **extra: object) -> dict[str, object]:
    return {
        "type": "message",
        "id": f"m-{text}"[:32],
        "role": role,
        "content": text,
        "created_at": "2026-11-29T10:00:00Z",
        **extra,
    }


def from_file(store: SessionStore, session_id: str) -> SessionState:
    """The truth: the file folded from its first byte, no cache involved."""
    return fold(filestore.read_jsonl(store.path(USER, session_id)))


def contents(state: SessionState) -> list[object]:
    return [m["content"] for m in state.messages]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path)


@pytest.fixture
def session_id(store: SessionStore) -> str:
    state, _ = store.create(USER, source="web", title="cached")
    store.append(USER, state.id, [message("one"), message("two", "assistant")])
    return state.id


# A process of its own with its own store (and cache): reads commands on stdin, one a line:
# `append <text>` appends a message, `load` prints the contents it loads, as JSON.
CHILD = """
import json, sys
from pathlib import Path
from shared.files.session_store import SessionStore
store = SessionStore(Path(sys.argv[1]))
user, sid = sys.argv[2], sys.argv[3]
for line in sys.stdin:
    verb, _, text = line.rstrip("\\n").partition(" ")
    if verb == "append":
        store.append(user, sid, [{"type": "message", "id": "m-" + text, "role": "user",
                                  "content": text, "created_at": "2026-11-29T10:00:00Z"}])
        print("ok", flush=True)
    elif verb == "load":
        state, _ = store.load(user, sid)
        print(json.dumps([m["content"] for m in state.messages]), flush=True)
"""


class Child:
    def __init__(self, root: Path, session_id: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), USER, session_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def append(self, text: str) -> None:
        assert self.ask(f"append {text}") == "ok"

    def load(self) -> list[object]:
        return json.loads(self.ask("load"))

    def close(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture
def children(tmp_path: Path, session_id: str) -> Iterator[tuple[Child, Child]]:
    pair = (Child(tmp_path, session_id), Child(tmp_path, session_id))
    yield pair
    for child in pair:
        child.close()


def test_two_processes_appending_alternately_each_see_the_others_messages(
    store: SessionStore, session_id: str, children: tuple[Child, Child]
) -> None:
    first, second = children
    expected = ["one", "two"]
    for n in range(6):
        writer, reader = (first, second) if n % 2 == 0 else (second, first)
        assert writer.load() == expected  # its cache is warm before the other appends
        writer.append(f"turn{n}")
        expected.append(f"turn{n}")
        assert reader.load() == expected
        assert contents(store.load(USER, session_id)[0]) == expected
    assert store.load(USER, session_id)[0] == from_file(store, session_id)


def test_a_clear_that_rewrites_the_file_is_seen(store: SessionStore, session_id: str) -> None:
    store.load(USER, session_id)
    path = store.path(USER, session_id)
    header = filestore.read_jsonl(path)[0]
    # A clear: the header and the title kept, the history gone, atomically (a new inode).
    filestore.atomic_write(path, filestore.encode_records([header]))
    state, info = store.load(USER, session_id)
    assert state.messages == []
    assert state.title == "cached"
    assert info.size == path.stat().st_size

    store.append(USER, session_id, [message("after the clear")])
    assert contents(store.load(USER, session_id)[0]) == ["after the clear"]


def test_a_rewrite_longer_than_what_was_cached_is_seen(
    store: SessionStore, session_id: str
) -> None:
    store.load(USER, session_id)
    path = store.path(USER, session_id)
    header = filestore.read_jsonl(path)[0]
    records = [header, *(message(f"new{n}") for n in range(5))]
    filestore.atomic_write(path, filestore.encode_records(records))
    assert contents(store.load(USER, session_id)[0]) == [f"new{n}" for n in range(5)]


def test_a_rewrite_in_place_with_other_bytes_is_seen(store: SessionStore, session_id: str) -> None:
    """Same inode, same or greater size, other content: the bytes before the offset differ."""
    store.load(USER, session_id)
    path = store.path(USER, session_id)
    header = filestore.read_jsonl(path)[0]
    data = filestore.encode_records([header, message("ONE"), message("TWO", "assistant")])
    inode = path.stat().st_ino
    with path.open("r+b") as handle:
        handle.write(data)
        handle.truncate()
    assert path.stat().st_ino == inode
    assert contents(store.load(USER, session_id)[0]) == ["ONE", "TWO"]


def test_an_import_that_replaces_the_file_is_seen(
    tmp_path: Path, store: SessionStore, session_id: str
) -> None:
    store.load(USER, session_id)
    other = SessionStore(tmp_path / "elsewhere")
    imported, _ = other.create(USER, source="import", title="imported")
    other.append(USER, imported.id, [message(f"imported{n}") for n in range(40)])
    path = store.path(USER, session_id)
    os.replace(other.path(USER, imported.id), path)  # a new inode under the same name
    state, _ = store.load(USER, session_id)
    assert state.title == "imported"
    assert contents(state) == [f"imported{n}" for n in range(40)]


def test_a_torn_tail_repaired_by_another_process_is_seen(
    tmp_path: Path, store: SessionStore, session_id: str, children: tuple[Child, Child]
) -> None:
    path = store.path(USER, session_id)
    with path.open("ab") as handle:  # what a crash in the middle of a write leaves
        handle.write(b'{"type":"message","id":"torn","role":"user","content":"half')
    assert contents(store.load(USER, session_id)[0]) == ["one", "two"]  # torn part ignored

    children[0].append("repaired")  # cuts the torn line off, then appends
    assert contents(store.load(USER, session_id)[0]) == ["one", "two", "repaired"]
    assert store.load(USER, session_id)[0] == from_file(store, session_id)


def test_a_line_read_while_it_was_being_written_is_folded_once_complete(
    store: SessionStore, session_id: str
) -> None:
    path = store.path(USER, session_id)
    line = filestore.encode_records([message("slow")])
    with path.open("ab") as handle:
        handle.write(line[:10])
        handle.flush()
        assert contents(store.load(USER, session_id)[0]) == ["one", "two"]
        handle.write(line[10:])
    assert contents(store.load(USER, session_id)[0]) == ["one", "two", "slow"]


def test_records_cut_back_and_overwritten_are_not_served(
    store: SessionStore, session_id: str
) -> None:
    """A failed append is cut back to where it started; a reader may have seen it whole.
    The next append writes other records at the same place."""
    path = store.path(USER, session_id)
    size = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(filestore.encode_records([message("phantom")]))
    assert contents(store.load(USER, session_id)[0])[-1] == "phantom"
    os.truncate(path, size)
    assert contents(store.load(USER, session_id)[0]) == ["one", "two"]  # shorter: seen

    with path.open("ab") as handle:
        handle.write(filestore.encode_records([message("phantom")]))
    store.load(USER, session_id)
    os.truncate(path, size)
    store.append(USER, session_id, [message("realthing")])  # as long as the phantom
    assert contents(store.load(USER, session_id)[0]) == ["one", "two", "realthing"]


def test_a_cold_start_works_from_the_file_alone(tmp_path: Path, session_id: str) -> None:
    restarted = SessionStore(tmp_path)  # a new process: an empty cache
    state, _ = restarted.load(USER, session_id)
    assert state == from_file(restarted, session_id)
    assert contents(state) == ["one", "two"]


def test_a_deleted_session_is_not_served_from_the_cache(
    store: SessionStore, session_id: str
) -> None:
    store.load(USER, session_id)
    store.path(USER, session_id).unlink()  # as another process's delete would
    with pytest.raises(NotFound):
        store.load(USER, session_id)


def test_changing_a_loaded_state_does_not_change_the_next_load(
    store: SessionStore, session_id: str
) -> None:
    state, _ = store.load(USER, session_id)
    state.apply(message("not saved"))
    state.apply({"type": "meta", "at": "2026-11-29T11:00:00Z", "set": {"title": "x", "k": 1}})
    state.messages.clear()
    state.sizes.clear()
    again, _ = store.load(USER, session_id)
    assert again == from_file(store, session_id)
    assert contents(again) == ["one", "two"]
    assert again.title == "cached"
    assert "k" not in again.meta


def test_an_unreadable_record_is_reported_every_time_and_never_half_applied(
    store: SessionStore, session_id: str
) -> None:
    store.load(USER, session_id)
    bad = message("bad time", created_at="not a time")
    store.append(USER, session_id, [message("fine"), bad])
    for _ in range(2):
        with pytest.raises(StorageError):
            store.load(USER, session_id)
    with pytest.raises(StorageError):
        SessionStore(store.data_dir).load(USER, session_id)  # the same without a cache


def test_a_bad_line_is_skipped_as_a_full_read_skips_it(
    store: SessionStore, session_id: str
) -> None:
    store.load(USER, session_id)
    with store.path(USER, session_id).open("ab") as handle:
        handle.write(b"not json\n")
    store.append(USER, session_id, [message("three")])
    state, _ = store.load(USER, session_id)
    assert contents(state) == ["one", "two", "three"]
    assert state == SessionStore(store.data_dir).load(USER, session_id)[0]


def test_memory_stays_within_the_budget_and_evicted_sessions_still_load(
    tmp_path: Path,
) -> None:
    small = SessionStore(tmp_path, cache_bytes=4000)
    ids = []
    for n in range(6):
        state, _ = small.create(USER, source="web")
        small.append(USER, state.id, [message(f"s{n}-{i}" + "x" * 200) for i in range(4)])
        ids.append(state.id)
    for session_id in ids * 2:
        state, _ = small.load(USER, session_id)
        assert state == from_file(small, session_id)
        assert small.cache.size <= 4000
    assert 0 < len(small.cache) < len(ids)

    big, _ = small.create(USER, source="web")
    small.append(USER, big.id, [message(f"big{i}" + "x" * 500) for i in range(10)])
    assert contents(small.load(USER, big.id)[0])[-1].startswith("big9")  # type: ignore[union-attr]
    assert small.cache.size <= 4000  # larger than the budget: never kept


def test_without_a_cache_every_load_reads_the_file(tmp_path: Path) -> None:
    uncached = SessionStore(tmp_path, cache_bytes=0)
    state, _ = uncached.create(USER, source="web")
    uncached.append(USER, state.id, [message("a")])
    assert contents(uncached.load(USER, state.id)[0]) == ["a"]
    uncached.append(USER, state.id, [message("b")])
    assert contents(uncached.load(USER, state.id)[0]) == ["a", "b"]
    assert len(uncached.cache) == 0


def test_threads_loading_and_appending_one_session_agree_with_the_file(
    store: SessionStore, session_id: str
) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                store.append(USER, session_id, [message(f"w{worker}-{i}")])
                state, _ = store.load(USER, session_id)
                assert f"w{worker}-{i}" in contents(state)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    state, _ = store.load(USER, session_id)
    assert state == from_file(store, session_id)
    assert len(state.messages) == 2 + 4 * 25
