"""What the client commands (`eonyx run`, `eonyx chat`) read from a streamed turn and show.

A streamed turn (`POST /sessions/<id>/turns` with `stream: true`) is server-sent events:
`token`, `tool_call`, `tool_result`, `memory_write`, then `done` or `error` (the API's
OpenAPI description lists their fields); a first message (`POST /sessions/turns`) starts with
`session`, naming the session it made. Both clients read the body as bytes with
shared/core/sse.py's decoder, never line by line with httpx's `iter_lines`, which also
breaks lines on U+2028 and the like; `turn_event` reads each event into its class of
shared/core/events.py, the module the server sends them from.

The `{ctx N%}` gauge: N is the server's percent rounded down, so a shown 80 is always
highlighted; it is highlighted from 80% (where compaction starts) and alarming from 90%.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from shared.core import sse
from shared.core.events import (
    ErrorBody,
    MemoryWrite,
    StreamEvent,
    ToolCall,
    ToolResult,
    TurnError,
    parse_stream,
)
from shared.memory.describe import describe_write

HIGHLIGHT_PERCENT = 80.0  # the compaction threshold: from here the gauge is highlighted
ALARM_PERCENT = 90.0
STEP_PREVIEW = 200  # characters of a tool's arguments or result on a one-line step

GaugeLevel = Literal["calm", "high", "alarm"]
MODEL_FAILED = 502  # the model failed: the user's message is saved, a retry answers it
Event = StreamEvent
Step = ToolCall | ToolResult | MemoryWrite  # what shows as one line beside the answer
STEPS = (ToolCall, ToolResult, MemoryWrite)


def turn_event(event: sse.Event) -> StreamEvent | None:
    """One event of a streamed turn as its class of shared/core/events.py (every `data` is
    JSON); None for a name this client does not know (a newer server's). An `error` it
    cannot read still ends the turn, as a failed model call."""
    parsed = parse_stream(event.name, event.json())
    if parsed is None and event.name == TurnError.NAME:
        parsed = TurnError(ErrorBody("", "the turn failed"), MODEL_FAILED)
    return parsed


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


def tool_call_line(call: ToolCall) -> str:
    """`name(arguments)` of a `tool_call` event."""
    return f"{call.function.name or '?'}({one_line(call.function.arguments or '')})"


def memory_line(event: Mapping[str, Any]) -> str:
    """What a `memory_write` event wrote to which file, in one line."""
    file_name = str(event.get("file") or "memory")
    try:
        return describe_write(file_name, event)
    except KeyError:  # a write this client does not know how to describe
        return f"{event.get('action') or 'changed'} {file_name}"
