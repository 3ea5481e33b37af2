"""GET /api/v1/events: a WebSocket that pushes the caller's live events.

Browsers cannot set headers on a WebSocket, so the token may also come as `?token=`, or a
signed-in browser's session cookie authenticates the socket. Any page may open a WebSocket to
any host and the browser sends the cookie along, so an upgrade the cookie would authenticate
is refused (403, before the handshake) unless its Origin is this server's own. Without
Redis there is nothing to push and the socket closes with a message saying so; clients then
fall back to polling the API.

An open socket holds no thread of its own: it waits on an event (a greenlet under the
gevent worker) that the process's `EventHub` sets when one of the user's events comes, and
that the socket's reader sets when the client speaks or leaves. A team's thousand tabs cost
a thousand such waits and one Redis subscription per process. Each user may hold
EVENTS_SOCKETS_PER_USER sockets and each sign-in EVENTS_SOCKETS_PER_TOKEN, across every
replica (shared/infra/socket_quota.py); one more is told `too_many_sockets` and closed with
1008. The kernel probes an idle socket's peer (TCP keep-alive, from KEEPALIVE_IDLE seconds of
silence), so a tab that vanished without a word (a laptop put to sleep, a dropped network) is
closed, and stops counting, within about a minute, at no cost to the server's loop.

An open socket checks its token again as soon as the user's sign-ins change (a token
revoked, a password changed, the account disabled or deleted: announced over Redis by
whichever process made the change, see shared/infra/event_bus.py), and every RECHECK_SECONDS
in any case (a token that merely expired): once the token is no longer valid, the socket
sends the reason (`invalid_token`, `account_disabled`) and closes with 1008 (policy
violation).
When the server loses its Redis the event stream ends, and the socket sends
`events_unavailable` and closes with 1011; the client reconnects or polls. When the server
stops (`close_all`, from the worker's SIGTERM) every socket closes with 1012 (service
restart), so a stop does not wait on open tabs and the clients reconnect to what runs next.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from flask import Flask, g, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed
from sqlalchemy.exc import SQLAlchemyError
from wsproto.utilities import LocalProtocolError

from api.context import authenticate, check_scope, presented_token, runtime, runtime_of
from api.extensions import error_payload
from api.observability import socket_closed, socket_opened
from shared.core.errors import Forbidden, Unauthorized
from shared.core.events import ErrorBody, Ready, SocketError
from shared.infra import event_bus
from shared.infra.change_listener import LOST
from shared.infra.socket_quota import USER, SocketQuota

log = logging.getLogger(__name__)

RECHECK_SECONDS = 45.0  # how long an open socket trusts its token unannounced (expiry)
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES = 30, 10, 3  # seconds, seconds, tries
MAX_MESSAGE_BYTES = 4096  # clients have nothing to say on this socket; a larger one closes it

NORMAL = 1000
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
SERVICE_RESTART = 1012
# What sending raises once the client is gone: the close seen by the socket's reader thread
# (ConnectionClosed), its socket closed under us (OSError), or a frame after the close.
GONE = (ConnectionClosed, OSError, LocalProtocolError)
DEFAULT_PORTS = {"http": 80, "https": 443}


class OpenSockets:
    """This process's open sockets, so a stopping server can close them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wakes: set[Callable[[], None]] = set()
        self.closing = False

    def add(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakes.add(wake)

    def discard(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakes.discard(wake)

    def close_all(self) -> None:
        """Every open socket closes with 1012 (and any opened from now on at once)."""
        self.closing = True
        with self._lock:
            wakes = list(self._wakes)
        for wake in wakes:
            wake()


OPEN = OpenSockets()  # per process: gunicorn's worker calls OPEN.close_all() on SIGTERM


def register_events(app: Flask) -> None:
    app.config["SOCK_SERVER_OPTIONS"] = {"max_message_size": MAX_MESSAGE_BYTES}
    sock = Sock(app)
    rt = runtime_of(app)
    quota = (
        SocketQuota(
            rt.redis,
            per_user=rt.settings.events_sockets_per_user,
            per_token=rt.settings.events_sockets_per_token,
        )
        if rt.redis is not None
        else None
    )

    @app.before_request
    def check_the_upgrade():  # type: ignore[no-untyped-def]
        if request.endpoint != "events_socket":
            return None
        if presented_token(request.args.get("token"))[1] and not _same_origin():
            message = "a signed-in browser may open the events socket only from this server's pages"
            return error_payload("bad_origin", message), 403
        # No compression (permessage-deflate), which browsers offer: an event is a few
        # hundred bytes, and a deflate context would triple an idle socket's memory.
        request.environ.pop("HTTP_SEC_WEBSOCKET_EXTENSIONS", None)
        return None

    @sock.route("/api/v1/events")
    def events_socket(ws) -> None:  # type: ignore[no-untyped-def]
        with contextlib.suppress(*GONE):  # the client left; there is no one to tell
            _serve(ws, request.args.get("token"), quota)


def _same_origin() -> bool:
    """Whether the request's Origin names the host it was sent to (scheme aside: behind a
    TLS proxy the server may see http)."""
    try:
        origin = urlsplit(request.headers.get("Origin", ""))
        host = urlsplit("//" + request.host)
        default = DEFAULT_PORTS.get(origin.scheme)
        return (
            origin.scheme in DEFAULT_PORTS
            and origin.hostname is not None
            and origin.hostname == host.hostname
            and (origin.port or default) == (host.port or default)
        )
    except ValueError:  # a port that is not a number
        return False


def _serve(ws, token: str | None, quota: SocketQuota | None) -> None:  # type: ignore[no-untyped-def]
    try:
        g.principal = check_scope(authenticate(token), None)
    except (Unauthorized, Forbidden) as exc:
        _close(ws, POLICY_VIOLATION, exc.code, exc.message)
        return
    except SQLAlchemyError as exc:
        log.warning("cannot check an events socket's token: %s", exc)
        _close(ws, INTERNAL_ERROR, "unavailable", "cannot check the token now")
        return
    hub = runtime().events
    if hub is None or quota is None:
        _close(ws, NORMAL, "no_events", "live events need Redis; poll the API instead")
        return
    user_id, token_id = g.principal.user_id, g.principal.token_id
    try:
        refused, socket_id = quota.claim(user_id, token_id)
        if refused is not None:
            _close(ws, POLICY_VIOLATION, "too_many_sockets", _too_many(refused, quota))
            return
        try:
            listener = hub.attach(user_id, ws.event.set)
        except BaseException:
            quota.release(user_id, token_id, socket_id)
            raise
    except (event_bus.EventsUnavailable, *LOST) as exc:
        log.info("events socket closed: %s", exc)
        _events_unavailable(ws)
        return
    _probe_when_idle(ws.sock)
    OPEN.add(ws.event.set)
    socket_opened()  # counted before "ready", so whoever reads the gauge after it sees it
    try:
        ws.send(json.dumps(Ready().as_json()))
        _relay(ws, listener, token, lambda: quota.renew(user_id, token_id, socket_id))
    finally:
        socket_closed()
        OPEN.discard(ws.event.set)
        hub.detach(listener)
        quota.release(user_id, token_id, socket_id)


def _probe_when_idle(sock: socket.socket) -> None:
    """TCP keep-alive on the socket (Linux's options; elsewhere the system's defaults)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (
            ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
            ("TCP_KEEPCNT", KEEPALIVE_PROBES),
        ):
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _too_many(refused: str, quota: SocketQuota) -> str:
    if refused == USER:
        return (
            f"you have {quota.per_user} live connections open already (one per open tab); "
            "close some tabs, or this one refreshes by polling"
        )
    return (
        f"this sign-in has {quota.per_token} live connections open already (one per open "
        "tab); close some tabs, or this one refreshes by polling"
    )


def _relay(  # type: ignore[no-untyped-def]
    ws, listener: event_bus.Listener, token: str | None, renew: Callable[[], None]
) -> None:
    """Send the user's events until the client leaves, its token stops being valid, the
    stream ends or the server stops. Waits on `ws.event`, which the hub, the socket's reader
    and `OPEN.close_all` set: cleared before every look, so no wake between is lost."""
    recheck = RECHECK_SECONDS * random.uniform(0.8, 1.0)  # a thousand tabs, spread out
    checked = time.monotonic()
    while True:
        ws.event.clear()
        for data in listener.take():
            ws.send(data)
        ws.input_buffer.clear()  # what a client says here is not read
        if not ws.connected:
            return
        if listener.ended:
            _events_unavailable(ws)
            return
        if OPEN.closing:
            _close(ws, SERVICE_RESTART, "server_restart", "the server is restarting; reconnect")
            return
        due = checked + recheck - time.monotonic()
        if listener.auth_changed or due <= 0:
            listener.auth_changed = False
            try:
                authenticate(token, cached=False)
                renew()
            except Unauthorized as exc:
                _close(ws, POLICY_VIOLATION, exc.code, exc.message)
                return
            except SQLAlchemyError as exc:
                log.warning("cannot check an events socket's token: %s", exc)
                _close(ws, INTERNAL_ERROR, "unavailable", "cannot check the token now")
                return
            except LOST as exc:
                log.info("events socket closed: %s", exc)
                _events_unavailable(ws)
                return
            checked = time.monotonic()
            continue
        ws.event.wait(due)


def _events_unavailable(ws) -> None:  # type: ignore[no-untyped-def]
    """The stream ended (Redis went away): the client reconnects or polls."""
    _close(ws, INTERNAL_ERROR, "events_unavailable", "live events are unavailable now")


def _close(ws, status: int, code: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """Say why, then close with `status` (the client may already be gone)."""
    try:
        ws.send(_error(code, message))
        ws.close(reason=status, message=message)
    except GONE:
        pass


def _error(code: str, message: str) -> str:
    return json.dumps(SocketError(ErrorBody(code, message)).as_json())
