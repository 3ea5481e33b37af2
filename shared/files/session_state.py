"""A session's state: the fold of its file's records, and what one message record holds.

The first record is the header (`type: session`); then `message` records (user, assistant,
tool calls and tool results) and `meta` records (`set: {title, pinned, ...}`) in the order
they happened; a `supersede` record takes the messages it names out of the state (they stay
in the file): a regenerated answer, or an edited user message and everything after it.
Folding them in order gives the state (`fold`, `SessionState.apply`).

The state holds what this layer and the index need: the header, what a session list shows
(META_FIELDS), counts and the messages. Whatever else the header or a meta record carries is
another package's bookkeeping (likes, the extraction mark, the project context, the
facade's keys): it folds into one map, `meta`, a later value replacing an earlier one, and
each owner reads its keys through a typed accessor beside its own code (`likes_of` in
shared.sessions.transcript, `extracted_turns` in shared.memory.extraction, ...).

Beside each kept message the state keeps two things computed once, when the record is
folded, so that a turn never goes over old messages again: its size as the model sees it
(`message_chars`: text parts plus tool calls' names and arguments), and the message the model
is sent for it, already JSON-encoded (`encoded_model_message`). A turn's request is then the
encoded messages after the summary's boundary put side by side, whatever their number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from shared.core.clock import parse_time
from shared.core.encoding import encode_json
from shared.core.messages import (
    CHAT_ROLES,
    MessageRecord,
    is_model_message,
    message_chars,
    model_message,
)

META_FIELDS = (
    "title",
    "title_pending",
    "title_locked",  # set by an explicit rename: no title job or mode changes the title after
    "pinned",
    "archived",
    "folder_id",
    "deleted_at",  # in the trash since then (ISO time); None again once restored
)


# The header's keys the state has fields for. Any other key of the header (the memory
# snapshot, where a fork or an import came from) starts the `meta` map.
HEADER_FIELDS = frozenset(
    ("type", "v", "id", "user_id", "source", "created_at", "temporary", "title")
    + ("title_pending", "folder_id", "forked_from")
)


def encoded_model_message(record: Mapping[str, Any]) -> bytes | None:
    """`model_message(record)` as JSON, for a request body; None for a record the model is
    not sent as it stands: not a model message, or a user message with images (their parts
    are read from the files at each turn)."""
    if not is_model_message(record) or (record["role"] == "user" and record.get("images")):
        return None
    return encode_json(model_message(record))


@dataclass
class SessionState:
    """What folding a session file gives. `messages` is empty when folded for the index.

    A state handed out by the store is the caller's own (`copy`): applying records to it or
    changing its fields never reaches the store's cache. The records themselves are shared
    and must not be modified.
    """

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
    user_messages: int = 0
    messages: list[MessageRecord] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # message_chars; 0: not sent to a model
    forms: list[bytes | None] = field(default_factory=list)  # encoded_model_message
    # Every other key, of the header then of the meta records, a later value replacing an
    # earlier one: the packages above keep their bookkeeping here (likes, the extraction
    # mark, the project context, the facade's keys...) and read it through accessors of
    # their own (`meta_text`, `meta_mapping`, `meta_count`). Setting one never moves the
    # session in the list.
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_header(cls, header: Mapping[str, Any]) -> SessionState:
        if header.get("type") != "session":
            raise ValueError("a session file must start with a session header")
        created = _stamp(header["created_at"])
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
            meta={key: value for key, value in header.items() if key not in HEADER_FIELDS},
        )

    def apply(self, record: Mapping[str, Any], *, keep_messages: bool = True) -> None:
        """Fold one record (after the header) into the state."""
        kind = record.get("type")
        if kind == "message":
            role = record.get("role")
            if role in CHAT_ROLES:
                self.message_count += 1
                if role == "user":
                    self.user_messages += 1
            self.image_count += len(record.get("images") or ())
            if keep_messages:
                self.messages.append(cast(MessageRecord, record))  # the file's shape
                self.sizes.append(message_chars(record) if is_model_message(record) else 0)
                self.forms.append(encoded_model_message(record))
        elif kind == "supersede":  # out of the state, still in the file (regenerate, edit)
            self._supersede(record)
            return
        elif kind == "meta":
            changes = record.get("set") or {}
            for key, value in changes.items():
                if key == "deleted_at":
                    self.deleted_at = _stamp(value) if value else None
                elif key in META_FIELDS:
                    setattr(self, key, value)
                else:
                    self.meta[key] = value
            return  # a rename, a pin, a move, the trash keep the session's place in the list
        else:
            return
        stamp = record.get("at") or record.get("created_at")
        if stamp:  # never back: a fork's copied messages are older than the fork itself
            self.updated_at = max(self.updated_at, _stamp(stamp))

    def _supersede(self, record: Mapping[str, Any]) -> None:
        """The named messages leave the conversation, wherever they are in it. The counts
        come from the record, so a fold without messages (the index's) agrees; the number of
        user messages sent (`user_messages`, the extraction's clock) keeps counting them."""
        self.message_count -= int(record.get("messages") or 0)
        self.image_count -= int(record.get("images") or 0)
        gone = set(record.get("ids") or ())
        if not gone or not self.messages:
            return
        kept = [i for i, message in enumerate(self.messages) if message.get("id") not in gone]
        self.messages = [self.messages[i] for i in kept]
        self.sizes = [self.sizes[i] for i in kept]
        self.forms = [self.forms[i] for i in kept]

    def copy(self, *, keep_messages: bool = True) -> SessionState:
        """A state of the caller's own (the lists and `meta` copied, the records and the
        values in `meta` shared)."""
        return dataclasses.replace(
            self,
            messages=list(self.messages) if keep_messages else [],
            sizes=list(self.sizes) if keep_messages else [],
            forms=list(self.forms) if keep_messages else [],
            meta=dict(self.meta),
        )


def meta_text(state: SessionState, key: str) -> str | None:
    """`state.meta[key]` if it is a string. A value of another type (a hand-edited file)
    reads as unset, here and in the two readers below."""
    value = state.meta.get(key)
    return value if isinstance(value, str) else None


def meta_mapping(state: SessionState, key: str) -> dict[str, Any] | None:
    """`state.meta[key]` if it is a mapping, as a copy the caller may change."""
    value = state.meta.get(key)
    return dict(value) if isinstance(value, dict) else None


def meta_count(state: SessionState, key: str) -> int | None:
    """`state.meta[key]` if it is a count (an int, not negative)."""
    value = state.meta.get(key)
    return value if isinstance(value, int) and value >= 0 else None


def _stamp(value: Any) -> datetime:
    """A record's time; one written without a zone (a hand-edited file) is taken as UTC."""
    if not isinstance(value, str):
        raise ValueError(f"a time must be an ISO 8601 string, not {type(value).__name__}")
    moment = parse_time(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fold(records: Iterable[Mapping[str, Any]], *, keep_messages: bool = True) -> SessionState:
    """Replay a session's records into its current state."""
    iterator = iter(records)
    header = next(iterator, None)
    if header is None:
        raise ValueError("empty session file")
    state = SessionState.from_header(header)
    for record in iterator:
        state.apply(record, keep_messages=keep_messages)
    return state
