"""What the client commands (`eonyx run`, `eonyx chat`) read from a streamed turn and show.

A streamed turn (`POST /sessions/<id>/turns` with `stream: true`) is server-sent events:
`token`, `tool_call`, `tool_result`, `memory_write`, then `done` or `error` (the API's
OpenAPI description lists their fields). Both clients read the body as bytes with
shared/core/sse.py's decoder, never line by line with httpx's `iter_lines`, which also
breaks lines on U+2028 and the like; `turn_event` parses each event's JSON.

The `{ctx N%}` gauge: N is the server's percent rounded down, so a shown 80 is always
highlighted; it is highlighted from 80% (where compaction starts) and alarming from 90%.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from shared.core import sse
from shared.memory.describe import describe_write

HIGHLIGHT_PERCENT = 80.0  # the compaction threshold: from here the gauge is highlighted
ALARM_PERCENT = 90.0
STEP_PREVIEW = 200  # characters of a tool's arguments or result on a one-line step

Event = tuple[str, Any]
GaugeLevel = Literal["calm", "high", "alarm"]


def turn_event(event: sse.Event) -> Event:
    """(name, parsed data) of one event of a streamed turn: every `data` is JSON."""
    return event.name, event.json()


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
