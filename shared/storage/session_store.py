"""The session store: one JSONL file per session, the truth about every conversation.

    users/<user-id>/sessions/<session-id>.jsonl

The first record is the header (`type: session`); then `message` records (user, assistant,
tool calls and tool results) and `meta` records (`set: {title, pinned, ...}`) in the order
they happened. A session's state is the fold of its file (`fold`), so everything else (the
SQL index, listings) can be rebuilt from these files.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.errors import InvalidInput, NotFound, StorageError
from shared.storage.filestore import (
    atomic_write,
    durable_append,
    encode_records,
    locked,
    read_jsonl,
    remove_tree,
)

SESSION_ID_RE = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{8}$")
USER_ID_RE = re.compile(r"^[0-9a-f]{32}$")
FORMAT_VERSION = 1
META_FIELDS = (
    "title",
    "title_pending",
    "title_locked",  # set by an explicit rename: no title job or mode changes the title after
    "pinned",
    "archived",
    "folder_id",
    "deleted_at",  # in the trash since then (ISO time); None again once restored
)
# Changes that do not make a session "recently updated" (it keeps its place in the list).
QUIET_FIELDS = ("title_locked", "deleted_at")
CHAT_ROLES = ("user", "assistant")
SUMMARY_FILE = "summary.json"


def new_session_id(moment: datetime | None = None) -> str:
    """`YYYYMMDDTHHMMSS-xxxxxxxx`: UTC start time plus 8 random hex, so ids sort by age."""
    return (moment or utcnow()).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def new_message_id() -> str:
    return secrets.token_hex(8)


def check_session_id(session_id: str) -> str:
    if not SESSION_ID_RE.match(session_id):
        raise InvalidInput(
            "session ids look like 20260705T091500-1a2b3c4d", code="invalid_session_id"
        )
    return session_id


def content_text(content: Any) -> str:
    """A message's text: the text parts of multi-part content, other parts as `[type]`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type"):
                texts.append(f"[{part['type']}]")
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return str(content)


@dataclass
class SessionState:
    """What folding a session file gives. `messages` is empty when folded for the index."""

    id: str
    user_id: str
    source: str
    created_at: datetime
    updated_at: datetime
    temporary: bool = False
    title: str | None = None
    title_pending: bool = False
    title_locked: bool = False
    pinned: bool = False
    archived: bool = False
    folder_id: str | None = None
    deleted_at: datetime | None = None
    forked_from: str | None = None
    message_count: int = 0
    image_count: int = 0
    snapshot: dict[str, Any] | None = None  # the memory frozen when the session started
    messages: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> SessionState:
        if header.get("type") != "session":
            raise ValueError("a session file must start with a session header")
        created = parse_time(header["created_at"])
        return cls(
            id=header["id"],
            user_id=header["user_id"],
            source=header.get("source", "web"),
            created_at=created,
            updated_at=created,
            temporary=bool(header.get("temporary", False)),
            title=header.get("title"),
            title_pending=bool(header.get("title_pending", False)),
            folder_id=header.get("folder_id"),
            forked_from=header.get("forked_from"),
            snapshot=header.get("snapshot"),
        )

    def apply(self, record: dict[str, Any], *, keep_messages: bool = True) -> None:
        """Fold one record (after the header) into the state."""
        kind = record.get("type")
        if kind == "message":
            if record.get("role") in CHAT_ROLES:
                self.message_count += 1
            self.image_count += len(record.get("images") or ())
            if keep_messages:
                self.messages.append(record)
        elif kind == "meta":
            changes = record.get("set") or {}
            for key, value in changes.items():
                if key == "deleted_at":
                    self.deleted_at = parse_time(value) if value else None
                elif key in META_FIELDS:
                    setattr(self, key, value)
                else:
                    self.extra[key] = value
            if not any(key in META_FIELDS and key not in QUIET_FIELDS for key in changes):
                return  # bookkeeping (likes, extraction progress, trash) keeps the list order
        else:
            return
        stamp = record.get("at") or record.get("created_at")
        if stamp:
            self.updated_at = parse_time(stamp)


def fold(records: Iterable[dict[str, Any]], *, keep_messages: bool = True) -> SessionState:
    """Replay a session's records into its current state."""
    iterator = iter(records)
    header = next(iterator, None)
    if header is None:
        raise ValueError("empty session file")
    state = SessionState.from_header(header)
    for record in iterator:
        state.apply(record, keep_messages=keep_messages)
    return state


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


class SessionStore:
    """Reads and writes session files under DATA_DIR/users; writers hold the file's flock."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.users_dir = data_dir / "users"

    def sessions_dir(self, user_id: str) -> Path:
        # The id patterns admit no separator and no dot-dir, so the join cannot escape.
        if not USER_ID_RE.match(user_id):
            raise InvalidInput("invalid user id", code="invalid_id")
        return self.users_dir / user_id / "sessions"

    def path(self, user_id: str, session_id: str) -> Path:
        return self.sessions_dir(user_id) / f"{check_session_id(session_id)}.jsonl"

    def create(
        self,
        user_id: str,
        *,
        source: str,
        title: str | None = None,
        folder_id: str | None = None,
        temporary: bool = False,
        extra: dict[str, Any] | None = None,
        records: list[dict[str, Any]] | None = None,
    ) -> tuple[SessionState, FileInfo]:
        """A new session file: the header and `records` (a fork's copy) in one durable write."""
        moment = utcnow()
        directory = self.sessions_dir(user_id)
        directory.mkdir(parents=True, exist_ok=True)
        header: dict[str, Any] = {
            "type": "session",
            "v": FORMAT_VERSION,
            "id": new_session_id(moment),
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
        return fold([header, *(records or ())]), FileInfo.of(stat)

    def append(self, user_id: str, session_id: str, records: list[dict[str, Any]]) -> Appended:
        """Durably add records: NotFound for a missing session, StorageError if the disk fails."""
        data = encode_records(records)
        try:
            stat = durable_append(self.path(user_id, session_id), data)
        except FileNotFoundError:
            raise NotFound("session not found") from None
        return Appended(stat.st_size - len(data), FileInfo.of(stat))

    def load(
        self, user_id: str, session_id: str, *, keep_messages: bool = True
    ) -> tuple[SessionState, FileInfo]:
        path = self.path(user_id, session_id)
        try:
            stat = path.stat()
            records = read_jsonl(path)
        except FileNotFoundError:
            raise NotFound("session not found") from None
        try:
            state = fold(records, keep_messages=keep_messages)
        except (ValueError, KeyError) as exc:
            # Damage is not deletion: say so (503) rather than pretend the session is gone.
            raise StorageError(f"session {session_id} cannot be read: {exc}") from None
        return state, FileInfo.of(stat)

    def rewrite(
        self,
        user_id: str,
        session_id: str,
        make: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    ) -> tuple[SessionState, FileInfo]:
        """Replace a session's records with `make(current records)`, atomically and under the
        file's lock (a writer waiting for it then appends to the new file)."""
        path = self.path(user_id, session_id)
        try:
            with locked(path):
                records = make(read_jsonl(path))
                atomic_write(path, encode_records(records))
                stat = path.stat()
        except FileNotFoundError:
            raise NotFound("session not found") from None
        return fold(records), FileInfo.of(stat)

    def delete(self, user_id: str, session_id: str) -> None:
        path = self.path(user_id, session_id)
        try:
            with locked(path):  # an append waiting for the lock then finds the file gone
                path.unlink()
        except FileNotFoundError:
            raise NotFound("session not found") from None
        remove_tree(path.with_suffix(""))

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
                except (ValueError, KeyError):
                    return False
                if not condition(state):
                    return False
                path.unlink()
        except FileNotFoundError:
            return False
        remove_tree(path.with_suffix(""))
        return True

    def delete_if_empty(self, user_id: str, session_id: str, older_than: datetime) -> bool:
        """Delete a session that never had a message and is unchanged since `older_than` (a
        cleared session had some: it stays)."""
        return self.delete_if(
            user_id,
            session_id,
            lambda state: (
                not (
                    state.message_count
                    or state.image_count
                    or state.updated_at > older_than
                    or "cleared_at" in state.extra
                )
            ),
        )

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
        atomic_write(path, json.dumps(summary, ensure_ascii=False).encode())

    def user_ids(self) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(self.users_dir) if USER_ID_RE.match(e.name))
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
            if name.endswith(".jsonl") and SESSION_ID_RE.match(name[:-6]):
                try:
                    yield name[:-6], FileInfo.of(entry.stat())
                except FileNotFoundError:
                    continue
