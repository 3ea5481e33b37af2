"""Server-sent events (text/event-stream), written and read in one place.

Eonyx both speaks SSE (a streamed turn, the OpenAI facade's chunks) and reads it (the model's
stream, `eonyx run`, `eonyx chat`). One codec for all of them, so the two ends cannot drift:

- `encode(data, event=None)` frames one event whose `data` is JSON. The JSON is UTF-8 but
  escapes U+0085, U+2028 and U+2029 (JSON's own escaping already covers every control
  character): those three are line breaks to Python's `str.splitlines` and thus to httpx's
  `iter_lines`, and a reader that split a JSON text on them could not parse it. `frame(text,
  event=None)` frames text that is not JSON (OpenAI's `[DONE]`), a line break in it becoming
  one more `data` line, as the format wants.
- `Decoder` reads on bytes, never on decoded text: it splits the body on LF (a CRLF loses its
  CR), and decodes a line once it is whole, so a chunk may end anywhere, inside a UTF-8
  character included. `feed(chunk)` returns the events the chunk completed and `end()` the one
  a body ended without its closing blank line, so a blocking `iter_bytes()` loop and an async
  `aiter_bytes()` loop drive the same object; `iter_events(chunks)` is the blocking loop.

Comments (`: keep-alive`) and the `id` and `retry` fields are read and dropped; an event with
no `data` is not one (the format's rule). A lone CR does not end a line: no server Eonyx
talks to sends one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

DEFAULT_EVENT = "message"  # the name of an event that gives none
# What JSON leaves unescaped but str.splitlines breaks lines on.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass(frozen=True)
class Event:
    """One server-sent event: its name and its `data` lines joined with LF."""

    name: str
    data: str

    def json(self) -> Any:
        """The data as JSON (ValueError when it is not)."""
        return json.loads(self.data)


def json_text(data: Any) -> str:
    """`data` as one line of JSON that any line-splitting reader keeps whole."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)


def frame(text: str, event: str | None = None) -> str:
    """One event carrying `text` as its data, named `event` (unnamed: a `message`)."""
    head = f"event: {event}\n" if event else ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return head + "".join(f"data: {line}\n" for line in lines) + "\n"


def encode(data: Any, event: str | None = None) -> str:
    """One event carrying `data` as JSON (see the module docstring for the escaping)."""
    return frame(json_text(data), event)


class Decoder:
    """Server-sent events from a body fed in chunks of bytes, cut anywhere."""

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the start of a line whose end has not come yet
        self._name: str | None = None
        self._data: list[str] = []
        self._started = False

    def feed(self, chunk: bytes) -> list[Event]:
        """The events this chunk completes."""
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return []
        self._pending.append(chunk)
        *lines, rest = b"".join(self._pending).split(b"\n")
        self._pending = [rest] if rest else []
        events: list[Event] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def end(self) -> list[Event]:
        """The event the body ended in without its blank line, if any; the decoder is then
        ready for another body."""
        events: list[Event] = []
        if self._pending:
            rest = b"".join(self._pending)
            self._pending = []
            self._line(rest)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        self._started = False
        return events

    def _line(self, raw: bytes) -> Event | None:
        raw = raw.removesuffix(b"\r")
        if not self._started:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark may open the body
            self._started = True
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            return None  # a comment (a keep-alive)
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> Event | None:
        event = Event(self._name or DEFAULT_EVENT, "\n".join(self._data)) if self._data else None
        self._name, self._data = None, []
        return event


def iter_events(chunks: Iterable[bytes]) -> Iterator[Event]:
    """Each server-sent event of a body given as chunks of bytes."""
    decoder = Decoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.end()
