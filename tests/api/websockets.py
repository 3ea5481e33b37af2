"""A WebSocket client for tests of /api/v1/events, and a live server to point it at.

simple_websocket's client has two races that made socket tests flaky; `EventsClient`
removes both:

- its handshake parses only the 101 answer from its first read: frames that arrived in the
  same read (the server's "ready", or an error and its close) stay buffered until more bytes
  come, which may be never. The reader thread here handles them before it reads again.
- `close()` sends on a socket that its reader thread closes as soon as the server's close
  arrives (`OSError: [Errno 9] Bad file descriptor`). `hang_up` closes only a socket the
  server has not closed, and tolerates the server closing it at the same moment.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from flask import Flask
from simple_websocket import Client, ConnectionClosed
from simple_websocket import ConnectionError as Refused
from werkzeug.serving import make_server
from wsproto.utilities import LocalProtocolError

from shared.infra import event_bus
from tests.api.conftest import API

WAIT = 10.0  # seconds a closed socket may take to notice (many times the rechecks used)


class EventsClient(Client):
    def handshake(self) -> None:
        """As a browser does: `Host` with the port (simple_websocket leaves it out, and the
        server compares it with a cookie-authenticated socket's Origin), and a refused
        handshake closes its socket."""
        self.host = f"{self.host}:{self.port}"
        try:
            super().handshake()
        except Refused:
            self.sock.close()
            raise

    def _thread(self) -> None:
        if not self._handle_events():  # frames that came with the handshake's answer
            self.connected = False
            self.event.set()
            self.sock.close()
            return
        super()._thread()

    def next_json(self, timeout: float = 5.0) -> dict[str, Any]:
        data = self.receive(timeout)
        if data is None:
            pytest.fail(f"nothing arrived on the events socket in {timeout:.0f} s")
        return json.loads(data)

    def until_closed(self, timeout: float = WAIT) -> tuple[list[dict[str, Any]], int]:
        """What the server sends until it closes the socket, and its close code."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = self.receive(0.2)
            except ConnectionClosed as closed:
                return seen, closed.reason
            if data is not None:
                seen.append(json.loads(data))
        hang_up(self)
        pytest.fail(f"the socket was still open after {timeout:.0f} s; it sent {seen}")

    def hang_up(self) -> None:
        hang_up(self)


def hang_up(ws: Client) -> None:
    """Close from the client side unless the server already did (then there is nothing to
    send, and the reader thread may be closing the socket this very moment)."""
    with contextlib.suppress(ConnectionClosed, OSError, LocalProtocolError):
        ws.close()


def connect(url: str, **kwargs: Any) -> EventsClient:
    return EventsClient(url, **kwargs)


def publish_raw(redis: Any, user_id: str, event: dict[str, Any]) -> None:
    """`event` on the user's channel as event_bus.publish sends one: the tests' own shapes
    (unknown types, extra fields) that no event class builds."""
    redis.publish(event_bus.channel(user_id), json.dumps(event))


@contextmanager
def live(app: Flask) -> Iterator[str]:
    """The app on a real server on loopback; yields the events socket's ws:// URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{server.port}{API}/events"
    finally:
        server.shutdown()
        server.server_close()
