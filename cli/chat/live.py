"""The live events of `eonyx chat`: the server's events socket (`GET /events`), read in a
thread, its events posted to the app as Textual messages.

`LiveEvents` is an invisible widget that owns the socket: it opens it, says when it is
`Ready` and when it `Closed` (and whether the server could not be reached at all), opens it
again after 1, 2, 5, then every 15 s, and turns each event the app cares about into a
message: a session's title written (`Titled`), a like's status (`Liked`). `live` says whether
the socket is open, for the app (and its session manager) to refresh by itself without it.
"""

from __future__ import annotations

import threading
from typing import Any

from textual import on, work
from textual.message import Message
from textual.widget import Widget

from cli.api_client import AsyncApiClient

RECONNECT_SECONDS = (1.0, 2.0, 5.0, 15.0)  # the events socket's waits before trying again


class LiveEvents(Widget):
    DEFAULT_CSS = "LiveEvents { display: none; }"

    class Ready(Message):
        """The socket is open: events arrive as they happen."""

    class Closed(Message):
        def __init__(self, reason: str, *, unreachable: bool) -> None:
            super().__init__()
            self.reason, self.unreachable = reason, unreachable

    class Titled(Message):
        """A session's title was written (the title job, or a rename elsewhere)."""

        def __init__(self, session_id: str, title: str | None) -> None:
            super().__init__()
            self.session_id, self.title = session_id, title

    class Liked(Message):
        """A like's status changed (`saving`, `saved`, `failed`) for these messages."""

        def __init__(
            self, session_id: str, message_ids: list[str], status: str | None, detail: str | None
        ) -> None:
            super().__init__()
            self.session_id, self.message_ids = session_id, message_ids
            self.status, self.detail = status, detail

    def __init__(self, api: AsyncApiClient, **kw: Any) -> None:
        super().__init__(**kw)
        self.api = api
        self.live = False
        self.reconnects = 0
        self.stop = threading.Event()

    def on_unmount(self) -> None:
        self.stop.set()

    @work(thread=True, exclusive=True, group="events")
    def listen(self) -> None:
        reason, reachable = self.api.listen(self.deliver, self.stop)
        if not self.stop.is_set():
            self.post_message(self.Closed(reason, unreachable=not reachable))

    def deliver(self, event: dict[str, Any]) -> None:
        """One event as the socket gives it (from any thread): posted as its message."""
        message = message_of(event)
        if message is not None and not self.post_message(message):
            self.stop.set()  # the app is gone

    @on(Ready)
    def _socket_ready(self) -> None:
        self.live, self.reconnects = True, 0

    @on(Closed)
    def _socket_closed(self) -> None:
        self.live = False
        wait = RECONNECT_SECONDS[min(self.reconnects, len(RECONNECT_SECONDS) - 1)]
        self.reconnects += 1
        self.set_timer(wait, self.listen)


def message_of(event: dict[str, Any]) -> Message | None:
    """The message of a server event; None for one the app does not show."""
    kind = event.get("type")
    if kind == "ready":
        return LiveEvents.Ready()
    if kind == "session.title":
        session_id = str(event.get("session_id") or event.get("id") or "")
        return LiveEvents.Titled(session_id, event.get("title"))
    if kind == "like.updated":
        ids = event.get("message_ids") or [event.get("pair_id")]
        return LiveEvents.Liked(
            str(event.get("session_id")), ids, event.get("status"), event.get("detail")
        )
    return None
