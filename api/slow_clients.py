"""A request's body is received within a deadline, so a slow client cannot hold the server.

gunicorn bounds the headers (its `keepalive` seconds); nothing bounds the body. A client that
announces `Content-Length: 100` and then sends a byte every few seconds would keep its
request, and whatever the request holds, for as long as it likes. So the WSGI input is read
through `DeadlineInput`: the body must arrive within REQUEST_BODY_SECONDS, plus a second for
every MIN_BYTES_PER_SECOND of it (a 25 MiB bundle import on a slow line still fits). Past the
deadline the request is answered 408 `request_timeout`, and the socket's reading side is shut
so that the server closes the connection instead of waiting for the rest.

One read of the server's body stream receives many times from the socket (gunicorn's reads
until it has what was asked for), so the deadline is on the whole read: a gevent timeout
under the gevent worker. Under threads (werkzeug's development server, the tests' live
servers) each receive waits for the time left instead, which bounds a silent client but not
a trickling one. Where the server gives no socket (Flask's test client) the input is left
as it is.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

import gevent
from gevent import monkey
from werkzeug.exceptions import RequestTimeout

MIN_BYTES_PER_SECOND = 64 * 1024
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class BodyTooSlow(RequestTimeout):
    description = "the request's body did not arrive in time; send it again at once"


class DeadlineInput:
    """`wsgi.input`, read within a deadline that grows with the bytes announced or read."""

    def __init__(self, stream: Any, sock: socket.socket, seconds: float, length: int) -> None:
        self._stream = stream
        self._sock = sock
        self._start = time.monotonic()
        self._seconds = seconds
        self._length = length
        self._read = 0

    def read(self, size: int = -1) -> bytes:
        return self._timed(lambda: self._stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._timed(lambda: self._stream.readline(size))

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines = []
        while line := self.readline():
            lines.append(line)
        return lines

    def __iter__(self) -> DeadlineInput:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def _timed(self, read: Callable[[], bytes]) -> bytes:
        allowed = self._seconds + max(self._length, self._read) / MIN_BYTES_PER_SECOND
        left = self._start + allowed - time.monotonic()
        if left <= 0:
            raise self._too_slow()
        previous = self._sock.gettimeout()
        self._sock.settimeout(left)
        whole_read = gevent.Timeout(left) if monkey.is_module_patched("socket") else None
        try:
            if whole_read is not None:
                with whole_read:
                    data = read()
            else:
                data = read()
        except TimeoutError:  # socket.timeout: one receive waited the time left
            raise self._too_slow() from None
        except gevent.Timeout as expired:
            if expired is not whole_read:
                raise
            raise self._too_slow() from None
        finally:
            self._sock.settimeout(previous)
        self._read += len(data)
        return data

    def _too_slow(self) -> BodyTooSlow:
        """The request is answered; the rest of its body is not waited for."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RD)
        return BodyTooSlow()


def body_deadline(app: WSGIApp, seconds: float) -> WSGIApp:
    """`app` with its request bodies read within `seconds` (and more for large ones)."""

    def timed_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
        if isinstance(sock, socket.socket):
            length = environ.get("CONTENT_LENGTH") or ""
            environ["wsgi.input"] = DeadlineInput(
                environ["wsgi.input"], sock, seconds, int(length) if length.isdigit() else 0
            )
        return app(environ, start_response)

    return timed_app
