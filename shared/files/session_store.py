"""The session store: one JSONL file per session, the truth about every conversation.

    users/<user-id>/sessions/<session-id>.jsonl

The records and their fold are described in `session_state`. A session's state is the fold
of its file, so everything else (the SQL index, listings) can be rebuilt from these files.
`load` serves it from a per-process cache (`session_cache`) that reads only the bytes
appended since the last read, and checks the file every time.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from shared.core.clock import isoformat, utcnow
from shared.core.errors import InvalidInput, NotFound, StorageError
from shared.core.messages import CHAT_ROLES
from shared.core.settings import Settings
from shared.files.filestore import (
    append_locked,
    atomic_write,
    durable_append,
    encode_records,
    locked,
    read_jsonl,
    remove_tree,
)
from shared.files.session_cache import SessionCache
from shared.files.session_state import (  # re-exported: the store's vocabulary
    META_FIELDS,
    SessionState,
    fold,
)
from shared.files.usage import UsageMeter

__all__ = [
    "CHAT_ROLES",
    "META_FIELDS",
    "Appended",
    "FileInfo",
    "SessionState",
    "SessionStore",
    "check_session_id",
    "fold",
    "new_session_id",
]

SESSION_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$")
USER_ID_RE = re.compile(r"^[0-9a-f]{32}$")
FORMAT_VERSION = 1
PATHS_KEPT = 4096  # session paths remembered (a plain dict, emptied when full)
DEFAULT_CACHE_BYTES = Settings.session_cache_bytes  # the default lives with the settings
SUMMARY_FILE = "summary.json"


def new_session_id(moment: datetime | None = None) -> str:
    """`YYYYMMDDTHHMMSS-xxxxxxxx`: UTC start time plus 8 random hex, so ids sort by age."""
    return (moment or utcnow()).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def check_session_id(session_id: str) -> str:
    if not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidInput(
            "session ids look like 20260705T091500-1a2b3c4d", code="invalid_session_id"
        )
    return session_id


@dataclass(frozen=True)
class FileInfo:
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileInfo:
        return cls(stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Appended:
    """What an append did: the file's size before it, and the file after it."""

    size_before: int
    info: FileInfo


def _not_empty(fd: int) -> None:
    """A 0-byte session file is no session: nothing may be appended to it without a header."""
    if os.fstat(fd).st_size == 0:
        raise FileNotFoundError(errno.ENOENT, "an empty session file")


class SessionStore:
    """Reads and writes session files under DATA_DIR/users; writers hold the file's flock.
    A 0-byte file is treated as no session everywhere (it has no header)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        usage: UsageMeter | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.users_dir = data_dir / "users"
        self.cache = SessionCache(cache_bytes)
        # The running figure of what each user stores (shared.files.usage): every write
        # below adds what it wrote; a delete or a rewrite has it measured again.
        self.usage = usage or UsageMeter(None)
        # A turn asks for its session's path half a dozen times, and pathlib is slow to join.
        self._paths: dict[tuple[str, str], Path] = {}

    def sessions_dir(self, user_id: str) -> Path:
        # The id patterns admit no separator and no dot-dir, so the join cannot escape.
        if not USER_ID_RE.fullmatch(user_id):
            raise InvalidInput("invalid user id", code="invalid_id")
        return self.users_dir / user_id / "sessions"

    def path(self, user_id: str, session_id: str) -> Path:
        key = (user_id, session_id)
        found = self._paths.get(key)
        if found is None:
            found = self.sessions_dir(user_id) / f"{check_session_id(session_id)}.jsonl"
            if len(self._paths) >= PATHS_KEPT:
                self._paths.clear()
            self._paths[key] = found
        return found

    def create(
        self,
        user_id: str,
        *,
        source: str,
        title: str | None = None,
        folder_id: str | None = None,
        temporary: bool = False,
        extra: dict[str, Any] | None = None,
        records: Sequence[Mapping[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> tuple[SessionState, FileInfo]:
        """A new session file: the header and `records` (a fork's copy, a turn's opening) in
        one durable write; `session_id` when the caller chose it (under its turn lock)."""
        moment = utcnow()
        directory = self.sessions_dir(user_id)
        directory.mkdir(parents=True, exist_ok=True)
        header: dict[str, Any] = {
            "type": "session",
            "v": FORMAT_VERSION,
            "id": session_id or new_session_id(moment),
            "user_id": user_id,
            "created_at": isoformat(moment),
            "source": source,
            "temporary": temporary,
            "title": title,
            "folder_id": folder_id,
            **(extra or {}),
        }
        stat = durable_append(
            self.path(user_id, header["id"]),
            encode_records([header, *(records or ())]),
            create=True,
        )
        self.usage.add(user_id, "sessions", stat.st_size)
        return fold([header, *(records or ())]), FileInfo.of(stat)

    def append(
        self, user_id: str, session_id: str, records: Sequence[Mapping[str, Any]]
    ) -> Appended:
        """Durably add records: NotFound for a missing session, StorageError if the disk fails."""
        data = encode_records(records)
        path = self.path(user_id, session_id)
        try:
            with locked(path) as fd:
                _not_empty(fd)
                stat = append_locked(fd, path, data)
        except FileNotFoundError:
            raise NotFound("session not found") from None
        self.usage.add(user_id, "sessions", len(data))
        return Appended(stat.st_size - len(data), FileInfo.of(stat))

    def append_if(
        self,
        user_id: str,
        session_id: str,
        decide: Callable[[SessionState], Sequence[Mapping[str, Any]] | None],
    ) -> Appended | None:
        """Append what `decide(state)` returns, holding the file's lock from the read to the
        write: a check and its write are atomic with respect to every other writer (they all
        take this lock). None when `decide` returned nothing."""
        path = self.path(user_id, session_id)
        try:
            with locked(path) as fd:
                _not_empty(fd)
                try:
                    state = fold(read_jsonl(path), keep_messages=False)
                except (ValueError, KeyError) as exc:
                    raise StorageError(f"session {session_id} cannot be read: {exc}") from None
                records = decide(state)
                if not records:
                    return None
                data = encode_records(records)
                stat = append_locked(fd, path, data)
        except FileNotFoundError:
            raise NotFound("session not found") from None
        self.usage.add(user_id, "sessions", len(data))
        return Appended(stat.st_size - len(data), FileInfo.of(stat))

    def load(
        self, user_id: str, session_id: str, *, keep_messages: bool = True
    ) -> tuple[SessionState, FileInfo]:
        """The session's state (the caller's own copy) and the file it was folded from.
        NotFound for a missing session, StorageError for one that cannot be read."""
        path = self.path(user_id, session_id)
        key = (user_id, session_id)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self.cache.forget(key)
            raise NotFound("session not found") from None
        try:
            if os.fstat(fd).st_size == 0:
                self.cache.forget(key)
                self._remove_if_empty(path)
                raise NotFound("session not found")
            state, stat = self.cache.read(
                key, fd, os.fstat(fd), path.name, keep_messages=keep_messages
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # Damage is not deletion: say so (503) rather than pretend the session is gone.
            raise StorageError(f"session {session_id} cannot be read: {exc}") from None
        finally:
            os.close(fd)
        return state, FileInfo.of(stat)

    def rewrite(
        self,
        user_id: str,
        session_id: str,
        make: Callable[[list[dict[str, Any]]], Sequence[Mapping[str, Any]]],
    ) -> tuple[SessionState, FileInfo]:
        """Replace a session's records with `make(current records)`, atomically and under the
        file's lock (a writer waiting for it then appends to the new file)."""
        path = self.path(user_id, session_id)
        try:
            with locked(path) as fd:
                _not_empty(fd)
                records = make(read_jsonl(path))
                atomic_write(path, encode_records(records))
                stat = path.stat()
        except FileNotFoundError:
            raise NotFound("session not found") from None
        self.usage.forget(user_id)
        return fold(records), FileInfo.of(stat)

    def _remove_if_empty(self, path: Path) -> None:
        """Remove a 0-byte session file: no session (a create that failed before it wrote
        its header, from an older version; a create now removes its own). Under the file's
        lock, so a create still writing it (it holds the lock) is never disturbed."""
        try:
            with locked(path) as fd:
                if os.fstat(fd).st_size == 0:
                    path.unlink()
        except (FileNotFoundError, StorageError):
            pass  # gone already, or a read-only store: it stays, still no session

    def delete(self, user_id: str, session_id: str) -> None:
        path = self.path(user_id, session_id)
        try:
            with locked(path):  # an append waiting for the lock then finds the file gone
                path.unlink()
        except FileNotFoundError:
            raise NotFound("session not found") from None
        finally:
            self.cache.forget((user_id, session_id))
        remove_tree(path.with_suffix(""))
        self.usage.forget(user_id)

    def delete_if(
        self, user_id: str, session_id: str, condition: Callable[[SessionState], bool]
    ) -> bool:
        """Delete a session if `condition(its state)` holds, atomically with respect to
        appends (both hold the file's lock). An unreadable file is left for a person."""
        path = self.path(user_id, session_id)
        try:
            with locked(path):
                try:
                    state = fold(read_jsonl(path), keep_messages=False)
                except (ValueError, KeyError, TypeError, AttributeError):
                    return False  # unreadable: leave it for a person to look at
                if not condition(state):
                    return False
                path.unlink()
        except FileNotFoundError:
            return False
        self.cache.forget((user_id, session_id))
        remove_tree(path.with_suffix(""))
        self.usage.forget(user_id)
        return True

    def sidecar_dir(self, user_id: str, session_id: str) -> Path:
        """The directory beside the JSONL for the files a session references (images) and
        its derived data (the compaction summary)."""
        return self.path(user_id, session_id).with_suffix("")

    def summary_path(self, user_id: str, session_id: str) -> Path:
        """Where the compaction summary of a session lives: derived data beside the JSONL."""
        return self.sidecar_dir(user_id, session_id) / SUMMARY_FILE

    def read_summary(self, user_id: str, session_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.summary_path(user_id, session_id).read_bytes())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_summary(self, user_id: str, session_id: str, summary: dict[str, Any]) -> None:
        path = self.summary_path(user_id, session_id)
        path.parent.mkdir(exist_ok=True)
        data = json.dumps(summary, ensure_ascii=False).encode()
        atomic_write(path, data)
        self.usage.add(user_id, "sessions", len(data))  # a replaced one: until measured again

    def user_ids(self) -> list[str]:
        try:
            return sorted(
                e.name for e in os.scandir(self.users_dir) if USER_ID_RE.fullmatch(e.name)
            )
        except FileNotFoundError:
            return []

    def scan(self, user_id: str) -> Iterator[tuple[str, FileInfo]]:
        """(session id, size/mtime) of every session file of a user, without opening them."""
        try:
            entries = list(os.scandir(self.sessions_dir(user_id)))
        except FileNotFoundError:
            return
        for entry in entries:
            name = entry.name
            if name.endswith(".jsonl") and SESSION_ID_RE.fullmatch(name[:-6]):
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue
                if stat.st_size:  # an empty file is no session (see `_remove_if_empty`)
                    yield name[:-6], FileInfo.of(stat)
