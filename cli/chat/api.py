"""Every HTTP call `eonyx chat` makes, in one small class, so the app is a client of the API
only (a remote team server works like a local one) and tests can drive it against a live
server or hand it a stand-in.

Errors come out as `ApiError(status, code, message)`: the server's `{"error": {...}}` when
there is one, status 0 when the server could not be reached. `listen` reads the live events
WebSocket (`/api/v1/events`); it blocks, so the app runs it in a thread.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from cli.client import error_of
from cli.stream import Event, turn_event
from shared.core import sse

LIST_PAGE = 50
TURN_READ_TIMEOUT = 15 * 60.0  # a turn may wait for the session lock, retries, tool rounds
Page = dict[str, Any]


class ApiError(Exception):
    """A call the server refused (status, code, message) or could not answer (status 0)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})" if code else message)
        self.status, self.code, self.message = status, code, message


class ChatAPI:
    def __init__(self, url: str, token: str, *, transport: httpx.AsyncBaseTransport | None = None):
        self.url, self.token = url.rstrip("/"), token
        self.http = httpx.AsyncClient(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(30.0, read=60.0),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One JSON call; the parsed body, or None for an empty one."""
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        if response.status_code >= 400:
            raise ApiError(response.status_code, *error_of(response))
        return response.json() if response.content else None

    def _unreachable(self, exc: httpx.HTTPError) -> ApiError:
        return ApiError(0, "unreachable", f"cannot reach Eonyx at {self.url}: {exc or type(exc)}")

    # -- sessions --

    async def list_sessions(
        self, query: str | None = None, cursor: str | None = None, limit: int = LIST_PAGE
    ) -> Page:
        params: dict[str, Any] = {"limit": limit}
        if query:
            params["q"] = query
        if cursor:
            params["cursor"] = cursor
        return await self.call("GET", "/sessions", params=params)

    async def latest_session(self) -> dict[str, Any] | None:
        """The non-archived session updated last, pinned or not (as `eonyx run -c` picks):
        the listing puts pinned ones first, so pages are read while all seen are pinned."""
        best: dict[str, Any] | None = None
        cursor: str | None = None
        while True:
            page = await self.list_sessions(cursor=cursor)
            for item in page["items"]:
                if best is None or (item["updated_at"], item["id"]) > (
                    best["updated_at"],
                    best["id"],
                ):
                    best = item
                if not item["pinned"]:
                    return best
            cursor = page.get("next_cursor")
            if not cursor:
                return best

    async def session(self, session_id: str) -> dict[str, Any]:
        return await self.call("GET", f"/sessions/{session_id}")

    async def create_session(self) -> dict[str, Any]:
        return await self.call("POST", "/sessions", json={})

    async def update_session(self, session_id: str, **changes: Any) -> dict[str, Any]:
        """PATCH title, pinned, archived or folder_id."""
        return await self.call("PATCH", f"/sessions/{session_id}", json=changes)

    async def delete_session(self, session_id: str) -> None:
        """To the trash."""
        await self.call("DELETE", f"/sessions/{session_id}")

    async def fork(self, session_id: str) -> dict[str, Any]:
        return await self.call("POST", f"/sessions/{session_id}/fork")

    async def clear(self, session_id: str) -> Any:
        return await self.call("POST", f"/sessions/{session_id}/clear")

    async def export_markdown(self, session_id: str) -> str:
        try:
            response = await self.http.get(
                f"/sessions/{session_id}/export", params={"format": "markdown"}
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        if response.status_code >= 400:
            raise ApiError(response.status_code, *error_of(response))
        if response.headers.get("content-type", "").startswith("application/json"):
            body = response.json()  # a JSON wrapper, should the server send one
            return str(body.get("content", "")) if isinstance(body, dict) else str(body)
        return response.text

    async def messages(self, session_id: str) -> list[dict[str, Any]]:
        return (await self.call("GET", f"/sessions/{session_id}/messages"))["items"]

    async def context(self, session_id: str) -> dict[str, Any]:
        """The context gauge's figures: tokens, window, percent."""
        return await self.call("GET", f"/sessions/{session_id}/context")

    async def like(self, session_id: str, message_id: str) -> dict[str, Any]:
        return await self.call("POST", f"/sessions/{session_id}/messages/{message_id}/like")

    async def unlike(self, session_id: str, message_id: str) -> None:
        await self.call("DELETE", f"/sessions/{session_id}/messages/{message_id}/like")

    # -- turns --

    async def stream_turn(self, session_id: str, body: dict[str, Any]) -> AsyncIterator[Event]:
        """The turn's server-sent events, `done` or `error` last. A refusal before the stream
        starts raises ApiError, and so does a stream that ends without `done` or `error`."""
        timeout = httpx.Timeout(30.0, read=TURN_READ_TIMEOUT)
        request = {**body, "stream": True}
        try:
            async with self.http.stream(
                "POST", f"/sessions/{session_id}/turns", json=request, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise ApiError(response.status_code, *error_of(response))
                decoder = sse.Decoder()
                async for chunk in response.aiter_bytes():
                    for event in decoder.feed(chunk):
                        name, data = turn_event(event)
                        yield name, data
                        if name in ("done", "error"):
                            return
                for event in decoder.end():
                    yield turn_event(event)
                    if event.name in ("done", "error"):
                        return
        except httpx.HTTPError as exc:
            message = f"the connection failed during the turn: {exc or type(exc).__name__}"
            raise ApiError(0, "stream_broken", message) from None
        raise ApiError(0, "stream_broken", "the answer stream ended before the turn was complete")

    # -- live events --

    def events_url(self) -> str:
        scheme, rest = self.url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/api/v1/events"

    def listen(self, deliver: Callable[[dict[str, Any]], None], stop: threading.Event) -> str:
        """Pass each live event to `deliver` until `stop` is set or the socket ends; returns
        why it ended (for the app to fall back to refreshing by itself)."""
        from simple_websocket import Client as WebSocket  # off the start-up path: 0.1 s
        from simple_websocket import ConnectionClosed

        try:
            ws = WebSocket.connect(
                self.events_url(), headers={"Authorization": f"Bearer {self.token}"}
            )
        except (OSError, ConnectionClosed, ValueError) as exc:
            return f"cannot open the events socket: {exc}"
        try:
            while not stop.is_set():
                data = ws.receive(timeout=0.5)
                if data is None:
                    continue
                event = json.loads(data)
                if event.get("type") == "error":
                    return str((event.get("error") or {}).get("message") or "events error")
                deliver(event)
        except (ConnectionClosed, OSError, ValueError) as exc:
            return f"the events socket closed: {exc}"
        finally:
            with contextlib.suppress(ConnectionClosed, OSError):  # closed by the server already
                ws.close()
        return "stopped"
