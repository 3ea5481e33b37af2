"""Durability of the session files: torn lines, crashes mid-append, failing disks."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.chat.project_context import project_context_of
from shared.core.errors import InvalidInput, StorageError
from shared.files import filestore
from shared.files.session_store import SessionStore, fold
from shared.integrations import api_head
from shared.memory.extraction import extracted_turns
from shared.sessions.transcript import likes_of

USER = "a" * 32


def message(text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": text[:16],
        "role": "user",
        "content": text,
        "created_at": "2026-11-29T10:00:00Z",
    }


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path)


def test_torn_last_line_is_ignored_on_read_and_repaired_on_append(store: SessionStore) -> None:
    state, _ = store.create(USER, source="web", title="t")
    store.append(USER, state.id, [message("first")])
    path = store.path(USER, state.id)
    with path.open("ab") as handle:  # what a crash in the middle of a write leaves
        handle.write(b'{"type":"message","role":"user","content":"half')

    loaded, _ = store.load(USER, state.id)
    assert [m["content"] for m in loaded.messages] == ["first"]

    store.append(USER, state.id, [message("second")])
    lines = path.read_bytes().splitlines()
    assert all(json.loads(line) for line in lines)  # every line is whole JSON again
    loaded, _ = store.load(USER, state.id)
    assert [m["content"] for m in loaded.messages] == ["first", "second"]


APPENDER = """
import sys
from pathlib import Path
from shared.files.session_store import SessionStore
root, user, sid = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
store = SessionStore(root)
big = "x" * 400_000
i = 0
while True:
    store.append(user, sid, [{"type": "message", "id": str(i), "role": "user",
                              "content": big, "created_at": "2026-11-29T10:00:00Z"}])
    print(i, flush=True)
    i += 1
"""


def test_sigkill_in_the_middle_of_appending_leaves_a_readable_session(
    store: SessionStore, tmp_path: Path, repo_root: Path
) -> None:
    state, _ = store.create(USER, source="web")
    with subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(tmp_path), USER, state.id],
        cwd=repo_root,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            for _ in range(3):  # let it get going: three appends have completed
                child.stdout.readline()
            time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
    assert child.returncode == -signal.SIGKILL

    loaded, _ = store.load(USER, state.id)
    assert loaded.message_count >= 3
    ids = [int(m["id"]) for m in loaded.messages]
    assert ids == list(range(len(ids)))  # whole records only, in order, none missing

    store.append(USER, state.id, [message("after the crash")])
    records = filestore.read_jsonl(store.path(USER, state.id))
    assert fold(records).messages[-1]["content"] == "after the crash"
    assert store.path(USER, state.id).read_bytes().endswith(b"\n")


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EIO])
def test_a_failing_write_raises_and_leaves_the_file_intact(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, failure: int
) -> None:
    state, _ = store.create(USER, source="web")
    store.append(USER, state.id, [message("kept")])
    path = store.path(USER, state.id)
    before = path.read_bytes()
    real_write = os.write

    def disk_gives_out(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data)[:10])  # part of the record reaches the file, then the disk fails
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(filestore.os, "write", disk_gives_out)
    with pytest.raises(StorageError) as caught:
        store.append(USER, state.id, [message("lost")])
    monkeypatch.undo()

    assert os.strerror(failure) in caught.value.message
    assert path.read_bytes() == before
    store.append(USER, state.id, [message("next")])
    assert [m["content"] for m in store.load(USER, state.id)[0].messages] == ["kept", "next"]


def test_a_failing_fsync_also_rolls_back(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, _ = store.create(USER, source="web")
    path = store.path(USER, state.id)
    before = path.read_bytes()
    real_fsync = os.fsync
    calls = {"n": 0}

    def fsync_fails_once(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(filestore.os, "fsync", fsync_fails_once)
    with pytest.raises(StorageError):
        store.append(USER, state.id, [message("lost")])
    assert path.read_bytes() == before


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    filestore.atomic_write(target, b"one")
    filestore.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_atomic_write_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "USER.md"
    filestore.atomic_write(target, b"old")

    def no_space(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(filestore.os, "write", no_space)
    with pytest.raises(StorageError, match="No space left"):
        filestore.atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["USER.md"]


def test_backups_are_timestamped_copies(tmp_path: Path) -> None:
    target = tmp_path / "USER.md"
    assert filestore.backup_file(target, tmp_path / "backups") is None
    target.write_text("v1")
    first = filestore.backup_file(target, tmp_path / "backups")
    target.write_text("v2")
    second = filestore.backup_file(target, tmp_path / "backups")
    assert first
    assert second
    assert first != second
    assert first.read_text() == "v1"
    assert second.read_text() == "v2"
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == [first.name, second.name]


@pytest.mark.parametrize("part", ["..", ".", "", "a/b", "..\\x", "x\0y"])
def test_safe_path_refuses_escapes(tmp_path: Path, part: str) -> None:
    with pytest.raises(InvalidInput):
        filestore.safe_path(tmp_path, "users", part)


def test_safe_path_refuses_symlinks_out_of_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(InvalidInput):
        filestore.safe_path(root, "link", "x")


@pytest.mark.parametrize(
    "bad", ["../x", "%2e%2e", "20260705T091500-1a2b3c4", "x" * 300, "20260705T091500-1A2B3C4D"]
)
def test_session_ids_are_checked(store: SessionStore, bad: str) -> None:
    with pytest.raises(InvalidInput):
        store.path(USER, bad)


def test_bookkeeping_folds_into_the_meta_map_and_never_moves_the_session() -> None:
    """Likes, the extraction marker, the project context and the facade's keys come back
    through their owners' accessors; a wrong-typed value (a hand-edited file) reads as unset;
    unknown keys stay in `meta`; none of them makes the session recently updated."""
    header = {"type": "session", "id": "s1", "user_id": "u1", "created_at": "2026-11-01T10:00:00Z"}
    kept = {
        "likes": {"m1": {"status": "saved"}},
        "extracted_turns": 4,
        "project_context": {"files": []},
        "api_head": "h1",
        "someday": 1,
    }
    broken = {"likes": "all", "extracted_turns": -2, "project_context": ["a"], "api_head": 7}
    state = fold([header, {"type": "meta", "at": "2026-11-02T10:00:00Z", "set": kept}])
    assert likes_of(state) == {"m1": {"status": "saved"}}
    assert extracted_turns(state) == 4
    assert project_context_of(state) == {"files": []}
    assert api_head.head(state) == "h1"
    assert state.meta["someday"] == 1
    assert state.updated_at == state.created_at
    state.apply({"type": "meta", "at": "2026-11-03T10:00:00Z", "set": broken})
    assert (likes_of(state), extracted_turns(state), project_context_of(state)) == ({}, None, None)
    assert api_head.head(state) is None
