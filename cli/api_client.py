"""The HTTP client of the console clients: every call `eonyx run`, `eonyx chat` and the
other client commands make to the API, so each is a client of the API only (a remote team
server works like a local one) and tests can drive it against a live server or a stand-in.

Two faces of one client, as httpx has them, sharing the base URL, the token, how errors
read and how a streamed turn is read: `ApiClient` blocks, for the click commands, which run
one call after another; `AsyncApiClient` is for the Textual app, whose event loop must not
block. Errors come out as `ApiError`, a click error that prints as the server's
`message (code)`, with a hint to log in again on a 401; status 0 when the server could not be
reached or the connection broke mid-turn. `listen` reads the live events WebSocket
(`/api/v1/events`); it blocks, so the app runs it in a thread.

What they print of stored text (titles, names, the server's messages) goes through
`shared.core.text.printable`: a control character or a bidirectional override shows as an
escape such as `\\x1b`, so a stored title cannot recolour the terminal or reorder a line.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import click
import httpx

from cli.stream import Event, turn_event
from shared.core import sse
from shared.core.text import printable

LIST_PAGE = 50
TURN_READ_TIMEOUT = 15 * 60.0  # a turn may wait for the session lock, retries, tool rounds
TIMEOUT = httpx.Timeout(30.0, read=60.0)
TURN_TIMEOUT = httpx.Timeout(30.0, read=TURN_READ_TIMEOUT)
# Idle connections are dropped before the server drops them (gunicorn's keep-alive is 5 s):
# a request sent on a connection the server is closing fails with "Server disconnected".
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2.0)
MODEL_FAILED = 502  # the model failed: the user's message is saved, a retry answers it
Page = dict[str, Any]


SOURCE = "cli"  # the sessions the console clients make (shared.index.listing.CONSOLE_SOURCE)


class ApiError(click.ClickException):
    """A call the server refused (status, code, message) or could not answer (status 0);
    `hint` says what the user can do next (log in again, retry the saved message)."""

    def __init__(self, status: int, code: str, message: str, hint: str | None = None) -> None:
        if hint is None:
            hint = "; run `eonyx login`" if status == 401 else ""
        super().__init__((f"{message} ({code})" if code else message) + hint)
        self.status, self.code, self.reason, self.hint = status, code, message, hint

    def __str__(self) -> str:
        return self.message


def error_of(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of an API error, safe to print; the raw text when the body is not
    Eonyx's JSON."""
    try:
        error = response.json()["error"]
        return printable(str(error["code"])), printable(str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return "", printable(response.text[:200] or response.reason_phrase)


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


class TurnStream:
    """The events of a streamed turn from its body's bytes, `done` or `error` last; a body
    that ends without either is a broken stream."""

    def __init__(self, client: _Api, session_id: str) -> None:
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
        for event in events:
            if self.finished:
                return
            name, data = turn_event(event)
            self.finished = name in ("done", "error")
            yield name, data


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

    def unreachable(self, exc: httpx.HTTPError) -> ApiError:
        return ApiError(0, "", f"cannot reach Eonyx at {self.url}: {exc or type(exc).__name__}")

    def broken(self, session_id: str, why: str | httpx.HTTPError) -> ApiError:
        """A turn whose connection broke after it was sent: the message may be saved."""
        if isinstance(why, httpx.ConnectError):
            return self.unreachable(why)
        if isinstance(why, httpx.HTTPError):
            why = f"the connection to Eonyx at {self.url} failed during the turn: " + (
                str(why) or type(why).__name__
            )
        hint = retry_hint(session_id, saved=False) if self.retry_hints else ""
        return ApiError(0, "stream_broken", why, hint)

    @staticmethod
    def body(response: httpx.Response) -> Any:
        return response.json() if response.content else None


class ApiClient(_Api):
    """The blocking client, for the click commands (`eonyx run`, `eonyx sessions` ...)."""

    retry_hints = True

    def __init__(self, url: str, token: str | None) -> None:
        super().__init__(url, token)
        self.http = httpx.Client(**self.options)

    @classmethod
    def from_config(cls) -> ApiClient:
        from cli.client import saved_login

        return cls(*saved_login())

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The raw response of a successful call (a download)."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise self.refused(response)
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One JSON call; the parsed body, or None for an empty one."""
        return self.body(self.send(method, path, **kwargs))

    def latest_session(self) -> dict[str, Any] | None:
        """The non-archived session updated last, pinned or not."""
        best, cursor = None, None
        while True:
            page = self.request("GET", "/sessions", params=_page_params(cursor=cursor))
            best, final = latest_of(best, page)
            if final:
                return best
            cursor = page["next_cursor"]

    def turn(self, session_id: str, body: dict[str, Any]) -> Any:
        """A whole turn as one JSON request."""
        path = f"/sessions/{session_id}/turns"
        try:
            response = self.http.post(path, json=body, timeout=TURN_TIMEOUT)
        except httpx.HTTPError as exc:
            raise self.broken(session_id, exc) from None
        if response.status_code >= 400:
            raise self.refused(response, session_id)
        return self.body(response)

    def stream_turn(self, session_id: str, body: dict[str, Any]) -> Iterator[Event]:
        """The turn's server-sent events, `done` or `error` last; a server that answers with
        JSON instead (no stream) gives one `done` with the turn."""
        request = {**body, "stream": True}
        try:
            with self.http.stream(
                "POST", f"/sessions/{session_id}/turns", json=request, timeout=TURN_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self.refused(response, session_id)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    response.read()
                    yield "done", response.json()
                    return
                stream = TurnStream(self, session_id)
                for chunk in response.iter_bytes():
                    yield from stream.feed(chunk)
                    if stream.finished:
                        return
                yield from stream.end()
        except httpx.HTTPError as exc:
            raise self.broken(session_id, exc) from None


class AsyncApiClient(_Api):
    """The same calls for the terminal app, whose event loop must not block."""

    def __init__(
        self, url: str, token: str, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(url, token)
        self.http = httpx.AsyncClient(**self.options, transport=transport)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One JSON call; the parsed body, or None for an empty one."""
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise self.refused(response)
        return self.body(response)

    async def list_sessions(
        self, query: str | None = None, cursor: str | None = None, limit: int = LIST_PAGE
    ) -> Page:
        return await self.request("GET", "/sessions", params=_page_params(query, cursor, limit))

    async def latest_session(self) -> dict[str, Any] | None:
        """The non-archived session updated last, pinned or not (as `eonyx run -c` picks)."""
        best, cursor = None, None
        while True:
            page = await self.list_sessions(cursor=cursor)
            best, final = latest_of(best, page)
            if final:
                return best
            cursor = page["next_cursor"]

    async def session(self, session_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/sessions/{session_id}")

    async def create_session(self) -> dict[str, Any]:
        return await self.request("POST", "/sessions", json={"source": SOURCE})

    async def update_session(self, session_id: str, **changes: Any) -> dict[str, Any]:
        """PATCH title, pinned, archived or folder_id."""
        return await self.request("PATCH", f"/sessions/{session_id}", json=changes)

    async def delete_session(self, session_id: str, *, purge: bool = False) -> None:
        """To the trash; with `purge`, gone at once."""
        params = {"purge": "true"} if purge else None
        await self.request("DELETE", f"/sessions/{session_id}", params=params)

    async def fork(self, session_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/sessions/{session_id}/fork")

    async def clear(self, session_id: str) -> Any:
        return await self.request("POST", f"/sessions/{session_id}/clear")

    async def export_markdown(self, session_id: str) -> str:
        try:
            response = await self.http.get(
                f"/sessions/{session_id}/export", params={"format": "markdown"}
            )
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise self.refused(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            body = response.json()  # a JSON wrapper, should the server send one
            return str(body.get("content", "")) if isinstance(body, dict) else str(body)
        return response.text

    async def messages(self, session_id: str) -> list[dict[str, Any]]:
        return (await self.request("GET", f"/sessions/{session_id}/messages"))["items"]

    async def context(self, session_id: str) -> dict[str, Any]:
        """The context gauge's figures: tokens, window, percent."""
        return await self.request("GET", f"/sessions/{session_id}/context")

    async def like(self, session_id: str, message_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/sessions/{session_id}/messages/{message_id}/like")

    async def unlike(self, session_id: str, message_id: str) -> None:
        await self.request("DELETE", f"/sessions/{session_id}/messages/{message_id}/like")

    async def stream_turn(self, session_id: str, body: dict[str, Any]) -> AsyncIterator[Event]:
        """The turn's server-sent events, `done` or `error` last. A refusal before the stream
        starts raises ApiError, and so does a stream that ends without `done` or `error`."""
        request = {**body, "stream": True}
        try:
            async with self.http.stream(
                "POST", f"/sessions/{session_id}/turns", json=request, timeout=TURN_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self.refused(response, session_id)
                stream = TurnStream(self, session_id)
                async for chunk in response.aiter_bytes():
                    for event in stream.feed(chunk):
                        yield event
                    if stream.finished:
                        return
                for event in stream.end():
                    yield event
        except httpx.HTTPError as exc:
            raise self.broken(session_id, exc) from None

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


def _page_params(
    query: str | None = None, cursor: str | None = None, limit: int = LIST_PAGE
) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": limit}
    if query:
        params["q"] = query
    if cursor:
        params["cursor"] = cursor
    return params
