"""What Eonyx pushes to its clients, typed: live events and a streamed turn's events.

Live events reach every client of a user over the `events` socket (shared/infra/event_bus.py
publishes them; their `type` names are registry.EVENT_*); a streamed turn's events reach the
client that sent the turn, as server-sent events named by NAME. Each kind is one frozen
dataclass, built in one place, whose `as_json()` is the object sent. The same fields give the
JSON Schema of the OpenAPI document (api/docs/event_schemas.py) and, from it, the web
client's types; the terminal client reads what it receives back into these classes
(`parse_live`, `parse_stream`). Imports only the standard library and registry names, so
clients can use it without the server's stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from shared.core import registry

OMITTED = {"omitted": True}  # field metadata: a None value is left out of the JSON, not null
WHOLE = {"whole": True}  # field metadata: the field's value is the event's whole JSON


@dataclass(frozen=True)
class Ref:
    """A field whose JSON is a component of the API's schemas (Annotated[..., Ref(name)])."""

    component: str


def _json(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_json(value)
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    return value


def _fields_json(event: object) -> dict[str, object]:
    found: dict[str, object] = {}
    for item in dataclasses.fields(event):  # type: ignore[arg-type]
        value = getattr(event, item.name)
        if not (value is None and item.metadata.get("omitted")):
            found[item.name] = _json(value)
    return found


class Event:
    """What every event class is: its JSON, as sent."""

    def as_json(self) -> dict[str, object]:
        whole = [item for item in dataclasses.fields(self) if item.metadata.get("whole")]  # type: ignore[arg-type]
        if whole:
            return dict(getattr(self, whole[0].name))
        return _fields_json(self)


# -- live events: {"type": TYPE, ...} to all of a user's clients ---------------------------------


class LiveEvent(Event):
    TYPE: ClassVar[str]

    def as_json(self) -> dict[str, object]:
        return {"type": self.TYPE, **super().as_json()}


@dataclass(frozen=True)
class SessionTitle(LiveEvent):
    """A pending title ended: the session is named, or keeps the title it had."""

    TYPE: ClassVar[str] = registry.EVENT_SESSION_TITLE
    session_id: str
    title: str | None
    title_pending: bool = False


@dataclass(frozen=True)
class SessionUpdated(LiveEvent):
    """A session changed out of the client's sight (a stopped turn, indexed at last)."""

    TYPE: ClassVar[str] = registry.EVENT_SESSION_UPDATED
    session_id: str


@dataclass(frozen=True)
class LikeUpdated(LiveEvent):
    """A like's curation status changed (saving, saved, failed; or removed)."""

    TYPE: ClassVar[str] = registry.EVENT_LIKE_UPDATED
    session_id: str
    pair_id: str  # the exchange: the id of its user message
    message_ids: list[str]
    status: str | None
    detail: str | None
    changes: int | None


@dataclass(frozen=True)
class MemoryUpdated(LiveEvent):
    """A memory file was written: by a tool of the model, a job, an edit or a restore."""

    TYPE: ClassVar[str] = registry.EVENT_MEMORY_UPDATED
    file: str  # USER.md, MEMORY.md
    action: str  # added, replaced, removed, consolidated, reconciled, edited, restored
    entry: str | None = field(default=None, metadata=OMITTED)
    previous: str | None = field(default=None, metadata=OMITTED)  # replaced: the old entry
    entries: int | None = field(default=None, metadata=OMITTED)  # how many the file now holds

    @classmethod
    def written(cls, file: str, done: Mapping[str, object]) -> MemoryUpdated:
        """The event of one write step (a WriteDone of shared/memory/entry.py) to `file`."""
        entry, previous, entries = done.get("entry"), done.get("previous"), done.get("entries")
        return cls(
            file,
            str(done["action"]),
            entry if isinstance(entry, str) else None,
            previous if isinstance(previous, str) else None,
            entries if isinstance(entries, int) else None,
        )


@dataclass(frozen=True)
class ErrorBody:
    """What went wrong, as every error of the API says it."""

    code: str
    message: str
    details: Mapping[str, object] | None = field(default=None, metadata=OMITTED)


@dataclass(frozen=True)
class Ready(LiveEvent):
    """The events socket's first frame: subscribed, every event from now on arrives."""

    TYPE: ClassVar[str] = registry.EVENT_READY


@dataclass(frozen=True)
class SocketError(LiveEvent):
    """The events socket's last frame: why it closes."""

    TYPE: ClassVar[str] = registry.EVENT_ERROR
    error: ErrorBody


LIVE_EVENTS: tuple[type[LiveEvent], ...] = (
    SessionTitle,
    SessionUpdated,
    LikeUpdated,
    MemoryUpdated,
    Ready,
    SocketError,
)

# -- a streamed turn's events: server-sent events named NAME, JSON data ---------------------------


class StreamEvent(Event):
    NAME: ClassVar[str]


@dataclass(frozen=True)
class SessionStarted(StreamEvent):
    """First event of a turn that made its session (POST /sessions/turns): the session's id."""

    NAME: ClassVar[str] = "session"
    session_id: str


@dataclass(frozen=True)
class Token(StreamEvent):
    """The next piece of the answer's text."""

    NAME: ClassVar[str] = "token"
    text: str


@dataclass(frozen=True)
class FunctionCall:
    """The tool a model called and its arguments."""

    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass(frozen=True)
class ToolCall(StreamEvent):
    """The model called a tool; `message_id` is the assistant message that carries the call."""

    NAME: ClassVar[str] = "tool_call"
    message_id: str
    id: str
    function: FunctionCall
    type: Literal["function"] = "function"


@dataclass(frozen=True)
class ToolResult(StreamEvent):
    """The tool's answer, as the message saved in the transcript."""

    NAME: ClassVar[str] = "tool_result"
    message: Annotated[Mapping[str, Any], Ref("Message")] = field(metadata=WHOLE)


@dataclass(frozen=True)
class MemoryWrite(StreamEvent):
    """A memory file was changed during the turn (the object of the live `memory.updated`)."""

    NAME: ClassVar[str] = "memory_write"
    event: Annotated[Mapping[str, Any], Ref("MemoryUpdated")] = field(metadata=WHOLE)


@dataclass(frozen=True)
class Done(StreamEvent):
    """The whole turn, as the JSON response without streaming."""

    NAME: ClassVar[str] = "done"
    result: Annotated[Mapping[str, Any], Ref("TurnResult")] = field(metadata=WHOLE)


@dataclass(frozen=True)
class TurnError(StreamEvent):
    """The turn failed after the stream began; what was saved stays saved."""

    NAME: ClassVar[str] = "error"
    error: ErrorBody
    status: int  # the HTTP status the error would have had (502: the model failed)


STREAM_EVENTS: tuple[type[StreamEvent], ...] = (
    SessionStarted,
    Token,
    ToolCall,
    ToolResult,
    MemoryWrite,
    Done,
    TurnError,
)


# -- reading them back (clients) -----------------------------------------------------------------


def _build(cls: type[Event], data: Mapping[str, Any]) -> Event:
    items = dataclasses.fields(cls)  # type: ignore[arg-type]
    whole = [item for item in items if item.metadata.get("whole")]
    if whole:
        return cls(dict(data))  # type: ignore[call-arg]  # a dataclass of one field
    nested: dict[str, Callable[..., object]] = {"error": ErrorBody, "function": FunctionCall}
    values: dict[str, object] = {}
    for item in items:
        if item.name in data:
            value = data[item.name]
            kind = nested.get(item.name)
            values[item.name] = kind(**value) if kind and isinstance(value, Mapping) else value
    return cls(**values)


def parse_live(data: Mapping[str, Any]) -> LiveEvent | None:
    """A live event's JSON as its class; None for a type this client does not know (newer
    servers may send more) or a malformed one."""
    for cls in LIVE_EVENTS:
        if data.get("type") == cls.TYPE:
            fields = {key: value for key, value in data.items() if key != "type"}
            try:
                return _build(cls, fields)  # type: ignore[return-value]
            except TypeError:
                return None
    return None


def parse_stream(name: str, data: Mapping[str, Any]) -> StreamEvent | None:
    """A streamed turn's event `name` with its JSON `data` as its class (None: unknown)."""
    for cls in STREAM_EVENTS:
        if name == cls.NAME:
            try:
                return _build(cls, data)  # type: ignore[return-value]
            except TypeError:
                return None
    return None
