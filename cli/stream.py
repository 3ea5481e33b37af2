"""What the client commands (`eonyx run`, `eonyx chat`) read from a streamed turn and show.

A streamed turn (`POST /sessions/<id>/turns` with `stream: true`) is server-sent events:
`token`, `tool_call`, `tool_result`, `memory_write`, then `done` or `error` (the API's
OpenAPI description lists their fields); a first message (`POST /sessions/turns`) starts with
`session`, naming the session it made. Both clients read the body as bytes with
shared/core/sse.py's decoder, never line by line with httpx's `iter_lines`, which also
breaks lines on U+2028 and the like; `turn_event` parses each event into its class below.

The `{ctx N%}` gauge: N is the server's percent rounded down, so a shown 80 is always
highlighted; it is highlighted from 80% (where compaction starts) and alarming from 90%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, cast

from shared.core import sse
from shared.memory.describe import describe_write

HIGHLIGHT_PERCENT = 80.0  # the compaction threshold: from here the gauge is highlighted
ALARM_PERCENT = 90.0
STEP_PREVIEW = 200  # characters of a tool's arguments or result on a one-line step

GaugeLevel = Literal["calm", "high", "alarm"]
StepKind = Literal["tool_call", "tool_result", "memory_write"]
STEP_KINDS: tuple[StepKind, ...] = ("tool_call", "tool_result", "memory_write")
MODEL_FAILED = 502  # the model failed: the user's message is saved, a retry answers it


@dataclass(frozen=True)
class SessionMade:
    """The first event of a first message: the session it made."""

    session_id: str


@dataclass(frozen=True)
class Token:
    text: str


@dataclass(frozen=True)
class Step:
    """A tool call, its result or a memory write, as the server sent it."""

    kind: StepKind
    data: dict[str, Any]


@dataclass(frozen=True)
class Done:
    """The turn, as a turn without a stream answers it."""

    turn: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    """The turn failed after its stream began (a failed model call, most often)."""

    status: int
    code: str
    message: str


Event = SessionMade | Token | Step | Done | Failed


def turn_event(event: sse.Event) -> Event | None:
    """One event of a streamed turn (every `data` is JSON); None for a name this client
    does not know (a newer server's)."""
    data = event.json()
    if event.name == "token":
        return Token(str(data["text"]))
    if event.name in STEP_KINDS:
        return Step(cast(StepKind, event.name), data)
    if event.name == "done":
        return Done(data)
    if event.name == "error":
        error = data.get("error") or {}
        status = int(data.get("status") or MODEL_FAILED)
        message = str(error.get("message", "the turn failed"))
        return Failed(status, str(error.get("code", "")), message)
    if event.name == "session":
        return SessionMade(str(data["session_id"]))
    return None


def gauge_text(percent: float | None) -> str | None:
    """`{ctx N%}`, or None without a context window."""
    return None if percent is None else f"{{ctx {math.floor(percent)}%}}"


def gauge_level(percent: float) -> GaugeLevel:
    if percent >= ALARM_PERCENT:
        return "alarm"
    return "high" if percent >= HIGHLIGHT_PERCENT else "calm"


def one_line(text: Any, limit: int = STEP_PREVIEW) -> str:
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_call_line(data: dict[str, Any]) -> str:
    """`name(arguments)` of a `tool_call` event."""
    function = data.get("function") or {}
    return f"{function.get('name', '?')}({one_line(function.get('arguments') or '')})"


def memory_line(event: dict[str, Any]) -> str:
    """What a `memory_write` event wrote to which file, in one line."""
    file_name = str(event.get("file") or "memory")
    try:
        return describe_write(file_name, event)
    except KeyError:  # a write this client does not know how to describe
        return f"{event.get('action') or 'changed'} {file_name}"
