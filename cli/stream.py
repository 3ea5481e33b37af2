"""What the client commands (`eonyx run`, `eonyx chat`) read from a streamed turn and show.

A streamed turn (`POST /sessions/<id>/turns` with `stream: true`) is server-sent events:
`token`, `tool_call`, `tool_result`, `memory_write`, then `done` or `error` (the API's
OpenAPI description lists their fields). `SSEParser` takes the body line by line, so the
same parser serves a blocking client (`iter_sse`) and an async one (the chat app).

The `{ctx N%}` gauge: N is the server's percent rounded down, so a shown 80 is always
highlighted; it is highlighted from 80% (where compaction starts) and alarming from 90%.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from shared.memory.describe import describe_write

HIGHLIGHT_PERCENT = 80.0  # the compaction threshold: from here the gauge is highlighted
ALARM_PERCENT = 90.0
STEP_PREVIEW = 200  # characters of a tool's arguments or result on a one-line step

Event = tuple[str, Any]
GaugeLevel = Literal["calm", "high", "alarm"]


class SSEParser:
    """Server-sent events fed one line at a time (without the line break)."""

    def __init__(self) -> None:
        self.name = "message"
        self.data: list[str] = []

    def feed(self, line: str) -> Event | None:
        """The (event, parsed data) this line completes, if any."""
        if not line:
            return self.end()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self.name = value
        elif field == "data":
            self.data.append(value)
        return None

    def end(self) -> Event | None:
        """The event in progress when the body ends (or at a blank line)."""
        event = (self.name, json.loads("\n".join(self.data))) if self.data else None
        self.name, self.data = "message", []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[Event]:
    """(event, parsed data) for each server-sent event in `lines`."""
    parser = SSEParser()
    for line in lines:
        if (event := parser.feed(line)) is not None:
            yield event
    if (event := parser.end()) is not None:
        yield event


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
