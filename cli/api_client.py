"""The HTTP client of the console clients: every call `eonyx run`, `eonyx chat`, the other
client commands and `eonyx mcp` make to the API, so each is a client of the API only (a
remote team server works like a local one) and tests can drive it against a live server or a
stand-in. The calls themselves, one method each, are in cli/api_resources.py.

Two faces of one client, as httpx has them, sharing the base URL, the token, how errors
read and how a streamed turn is read: `ApiClient` blocks, for the click commands, which run
one call after another; `AsyncApiClient` is for the Textual app and the MCP server, whose
event loops must not block. Errors come out as `ApiError` (cli/api_error.py). A turn without
a session (`session_id` None) goes to `POST /sessions/turns`, which makes the session only
once the message is accepted: a refused first message leaves nothing to clean up. `listen`
reads the live events WebSocket (`/api/v1/events`); it blocks, so the app runs it in a thread.

What they print of stored text (titles, names, the server's messages) goes through
`shared.core.text.printable`: a control character or a bidirectional override shows as an
escape such as `\\x1b`, so a stored title cannot recolour the terminal or reorder a line.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import httpx

from cli.api_error import ApiError
from cli.api_resources import SOURCE, Resources
from cli.stream import MODEL_FAILED, Event, turn_event
from shared.core import sse
from shared.core.events import Done, SessionStarted
from shared.core.text import printable

TURN_READ_TIMEOUT = 15 * 60.0  # a turn may wait for the session lock, retries, tool rounds
TIMEOUT = httpx.Timeout(30.0, read=60.0)
TURN_TIMEOUT = httpx.Timeout(30.0, read=TURN_READ_TIMEOUT)
# Idle connections are dropped before the server drops them (gunicorn's keep-alive is 5 s):
# a request sent on a connection the server is closing fails with "Server disconnected".
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2.0)
Page = dict[str, Any]


def error_of(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of an API error, safe to print; the raw text when the body is not
    Eonyx's JSON."""
    try:
        error = response.json()["error"]
        return printable(str(error["code"])), printable(str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return "", printable(response.text[:200] or response.reason_phrase)


def session_of(response: httpx.Response, session_id: str | None) -> str | None:
    """The turn's session: the one asked, or the one a first message made (when the model
    failed after the message was saved, the error names it: `details.session_id`, and so
    does the `Location` header)."""
    if session_id is not None:
        return session_id
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        details = response.json()["error"].get("details") or {}
        if details.get("session_id"):
            return str(details["session_id"])
    location = response.headers.get("location", "")
    return location.rstrip("/").rpartition("/sessions/")[2] or None


def counted(number: int, noun: str) -> str:
    """`1 session`, `2 sessions`, `2 sign-ins or keys`: how many, as a person writes it."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun.replace(' or ', 's or ')}s"


def format_time(iso: str) -> str:
    """`YYYY/MM/DD HH:mm`, 24-hour, in local time: the same on every machine."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    return moment.strftime("%Y/%m/%d %H:%M")


def retry_hint(session_id: str, *, saved: bool = True) -> str:
    return (
        f"\nyour message {'is' if saved else 'may be'} saved in session {session_id}; "
        f"to answer it again run: eonyx run -s {session_id} --retry"
    )


def latest_of(best: dict[str, Any] | None, page: Page) -> tuple[dict[str, Any] | None, bool]:
    """The session updated last so far, and whether it is final. The listing puts pinned
    sessions first, then the others newest first: the first unpinned one ends the search."""
    for item in page["items"]:
        if best is None or (item["updated_at"], item["id"]) > (best["updated_at"], best["id"]):
            best = item
        if not item["pinned"]:
            return best, True
    return best, not page.get("next_cursor")


def turn_request(session_id: str | None, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Where a turn goes and what it sends: a first message makes its session (as `cli`)."""
    if session_id is None:
        return "/sessions/turns", {"source": SOURCE, **body}
    return f"/sessions/{session_id}/turns", body


class TurnStream:
    """The events of a streamed turn from its body's bytes, `done` or `error` last; a body
    that ends without either is a broken stream. `session_id` is known from the start, or
    from the first event of a first message."""

    def __init__(self, client: _Api, session_id: str | None) -> None:
        self.client, self.session_id = client, session_id
        self.decoder = sse.Decoder()
        self.finished = False

    def feed(self, chunk: bytes) -> Iterator[Event]:
        yield from self._events(self.decoder.feed(chunk))

    def end(self) -> Iterator[Event]:
        yield from self._events(self.decoder.end())
        if not self.finished:
            why = "the answer stream ended before the turn was complete"
            raise self.client.broken(self.session_id, why)

    def _events(self, events: Iterable[sse.Event]) -> Iterator[Event]:
        for raw in events:
            if self.finished:
                return
            event = turn_event(raw)
            if isinstance(event, SessionStarted):
                self.session_id = event.session_id
            self.finished = raw.name in ("done", "error")
            if event is not None:
                yield event

    def answered(self, response: httpx.Response) -> Iterator[Event]:
        """A server that answered with JSON instead of a stream: one `done` with the turn
        (after the session it made, for a first message)."""
        turn = response.json()
        self.finished = True
        if self.session_id is None and turn.get("session_id"):
            yield SessionStarted(str(turn["session_id"]))
        yield Done(turn)


class _Api:
    """What both clients share: where the API is, who asks, and how its errors read."""

    # Whether an error says how to answer a saved message again (`eonyx run --retry`); the
    # terminal app offers its own retry key instead.
    retry_hints = False

    def __init__(self, url: str, token: str | None) -> None:
        self.url, self.token = url.rstrip("/"), token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.options: dict[str, Any] = {
            "base_url": self.url + "/api/v1",
            "headers": headers,
            "timeout": TIMEOUT,
            "limits": LIMITS,
        }

    def refused(self, response: httpx.Response, session_id: str | None = None) -> ApiError:
        """The server's refusal; a failed model call says how to answer the saved message."""
        hint = None
        if self.retry_hints and session_id and response.status_code == MODEL_FAILED:
            hint = retry_hint(session_id)
        return ApiError(response.status_code, *error_of(response), hint)

    def turn_refused(self, response: httpx.Response, session_id: str | None) -> ApiError:
        """A turn's refusal; a first message saved before the model failed names its session."""
        session_id = session_of(response, session_id)
        error = self.refused(response, session_id)
        error.session_id = session_id
        return error

    def unreachable(self, exc: httpx.HTTPError) -> ApiError:
        return ApiError(0, "", f"cannot reach Eonyx at {self.url}: {exc or type(exc).__name__}")

    def broken(self, session_id: str | None, why: str | httpx.HTTPError) -> ApiError:
        """A turn whose connection broke after it was sent: the message may be saved."""
        if isinstance(why, httpx.ConnectError):
            return self.unreachable(why)
        if isinstance(why, httpx.HTTPError):
            why = f"the connection to Eonyx at {self.url} failed during the turn: " + (
                str(why) or type(why).__name__
            )
        hint = retry_hint(session_id, saved=False) if self.retry_hints and session_id else ""
        return ApiError(0, "stream_broken", why, hint)

    @staticmethod
    def body(response: httpx.Response, pick: str | None = None) -> Any:
        found: Any = response.json() if response.content else None
        return found[pick] if pick else found

    @staticmethod
    def is_stream(response: httpx.Response) -> bool:
        return response.headers.get("content-type", "").startswith("text/event-stream")


class ApiClient(_Api, Resources[Any]):
    """The blocking client, for the click commands (`eonyx run`, `eonyx sessions` ...)."""

    retry_hints = True

    def __init__(self, url: str, token: str | None) -> None:
        super().__init__(url, token)
        self.http = httpx.Client(**self.options)

    @classmethod
    def from_config(cls) -> ApiClient:
        from cli.config import saved_login

        return cls(*saved_login())

    def call(
        self, method: str, path: str, *, pick: str | None = None, raw: bool = False, **kw: Any
    ) -> Any:
        """One call: the parsed body (None for an empty one), or with `raw` the response."""
        try:
            response = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise self.refused(response)
        return response if raw else self.body(response, pick)

    def latest_session(self) -> dict[str, Any] | None:
        """The non-archived session updated last, pinned or not."""
        best, cursor = None, None
        while True:
            page = self.list_sessions(cursor=cursor)
            best, final = latest_of(best, page)
            if final:
                return best
            cursor = page["next_cursor"]

    def turn(self, session_id: str | None, body: dict[str, Any]) -> Any:
        """A whole turn as one JSON request (a first message's carries `session_id`)."""
        path, request = turn_request(session_id, body)
        try:
            response = self.http.post(path, json=request, timeout=TURN_TIMEOUT)
        except httpx.HTTPError as exc:
            raise self.broken(session_id, exc) from None
        if response.status_code >= 400:
            raise self.turn_refused(response, session_id)
        return self.body(response)

    def stream_turn(self, session_id: str | None, body: dict[str, Any]) -> Iterator[Event]:
        """The turn's events, `Done` or `TurnError` last (a first message's start with
        `SessionStarted`); a server that answers with JSON instead gives one `Done`."""
        path, request = turn_request(session_id, {**body, "stream": True})
        stream = TurnStream(self, session_id)
        try:
            with self.http.stream("POST", path, json=request, timeout=TURN_TIMEOUT) as response:
                if response.status_code >= 400 or not self.is_stream(response):
                    response.read()
                    if response.status_code >= 400:
                        raise self.turn_refused(response, session_id)
                    yield from stream.answered(response)
                    return
                for chunk in response.iter_bytes():
                    yield from stream.feed(chunk)
                    if stream.finished:
                        return
                yield from stream.end()
        except httpx.HTTPError as exc:
            raise self.broken(stream.session_id, exc) from None


class AsyncApiClient(_Api, Resources[Awaitable[Any]]):
    """The same calls for the terminal app and the MCP server, whose event loops must not
    block: each resource method gives an awaitable of what the blocking client returns."""

    def __init__(
        self, url: str, token: str, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(url, token)
        self.http = httpx.AsyncClient(**self.options, transport=transport)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call(
        self, method: str, path: str, *, pick: str | None = None, raw: bool = False, **kw: Any
    ) -> Any:
        """One call: the parsed body (None for an empty one), or with `raw` the response."""
        try:
            response = await self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise self.refused(response)
        return response if raw else self.body(response, pick)

    async def latest_session(self) -> dict[str, Any] | None:
        """The non-archived session updated last, pinned or not (as `eonyx run -c` picks)."""
        best, cursor = None, None
        while True:
            page = await self.list_sessions(cursor=cursor)
            best, final = latest_of(best, page)
            if final:
                return best
            cursor = page["next_cursor"]

    async def export_markdown(self, session_id: str) -> str:
        response = await self.export(session_id, "markdown")
        if response.headers.get("content-type", "").startswith("application/json"):
            body = response.json()  # a JSON wrapper, should the server send one
            return str(body.get("content", "")) if isinstance(body, dict) else str(body)
        return str(response.text)

    async def stream_turn(
        self, session_id: str | None, body: dict[str, Any]
    ) -> AsyncIterator[Event]:
        """The turn's events, `Done` or `TurnError` last (a first message's start with
        `SessionStarted`). A refusal before the stream starts raises ApiError, and so does a
        stream that ends without `done` or `error`."""
        path, request = turn_request(session_id, {**body, "stream": True})
        stream = TurnStream(self, session_id)
        try:
            async with self.http.stream(
                "POST", path, json=request, timeout=TURN_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self.turn_refused(response, session_id)
                async for chunk in response.aiter_bytes():
                    for event in stream.feed(chunk):
                        yield event
                    if stream.finished:
                        return
                for event in stream.end():
                    yield event
        except httpx.HTTPError as exc:
            raise self.broken(stream.session_id, exc) from None

    # -- live events --

    def events_url(self) -> str:
        scheme, rest = self.url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/api/v1/events"

    def listen(
        self, deliver: Callable[[dict[str, Any]], None], stop: threading.Event
    ) -> tuple[str, bool]:
        """Pass each live event to `deliver` until `stop` is set or the socket ends; returns
        why it ended (for the app to fall back to refreshing by itself) and whether the server
        could be reached at all (a refused connection is an outage; a refused handshake not)."""
        from simple_websocket import Client as WebSocket  # off the start-up path: 0.1 s
        from simple_websocket import ConnectionClosed

        try:
            ws = WebSocket.connect(
                self.events_url(), headers={"Authorization": f"Bearer {self.token}"}
            )
        except OSError as exc:
            return f"cannot open the events socket: {exc}", False
        except (ConnectionClosed, ValueError) as exc:
            return f"cannot open the events socket: {exc}", True
        try:
            while not stop.is_set():
                data = ws.receive(timeout=0.5)
                if data is None:
                    continue
                event = json.loads(data)
                if event.get("type") == "error":
                    return str((event.get("error") or {}).get("message") or "events error"), True
                deliver(event)
        except (ConnectionClosed, OSError, ValueError) as exc:
            return f"the events socket closed: {exc}", True
        finally:
            with contextlib.suppress(ConnectionClosed, OSError):  # closed by the server already
                ws.close()
        return "stopped", True
