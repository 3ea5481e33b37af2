"""GET /api/v1/events: a WebSocket that pushes the caller's live events.

Browsers cannot set headers on a WebSocket, so the token may also come as `?token=`, or a
signed-in browser's session cookie authenticates the socket. Any page may open a WebSocket to
any host and the browser sends the cookie along, so an upgrade the cookie would authenticate
is refused (403, before the handshake) unless its Origin is this server's own. Without
Redis there is nothing to push and the socket closes with a message saying so; clients then
fall back to polling the API.

An open socket checks its token again as soon as the user's sign-ins change (a token
revoked, a password changed, the account disabled or deleted: announced over Redis by
whichever process made the change, see shared/infra/event_bus.py), and every RECHECK_SECONDS
in any case (a token that merely expired): once the token is no longer valid, the socket
sends the reason (`invalid_token`, `account_disabled`) and closes with 1008 (policy
violation).
When the server loses its Redis the event stream ends, and the socket sends
`events_unavailable` and closes with 1011; the client reconnects or polls.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from urllib.parse import urlsplit

from flask import Flask, g, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed
from sqlalchemy.exc import SQLAlchemyError
from wsproto.utilities import LocalProtocolError

from api.context import authenticate, check_scope, presented_token, runtime
from api.extensions import error_payload
from api.observability import socket_closed, socket_opened
from shared.core import registry
from shared.core.errors import Forbidden, Unauthorized
from shared.infra import event_bus

log = logging.getLogger(__name__)

RECHECK_SECONDS = 45.0  # how long an open socket trusts its token unannounced (expiry)
POLL_SECONDS = 1.0  # how often the listen loop wakes up in silence (client gone? recheck due?)

NORMAL = 1000
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
# What sending raises once the client is gone: the close seen by the socket's reader thread
# (ConnectionClosed), its socket closed under us (OSError), or a frame after the close.
GONE = (ConnectionClosed, OSError, LocalProtocolError)
DEFAULT_PORTS = {"http": 80, "https": 443}


def register_events(app: Flask) -> None:
    sock = Sock(app)

    @app.before_request
    def refuse_cross_site_cookie():  # type: ignore[no-untyped-def]
        if (
            request.endpoint == "events_socket"
            and presented_token(request.args.get("token"))[1]
            and not _same_origin()
        ):
            message = "a signed-in browser may open the events socket only from this server's pages"
            return error_payload("bad_origin", message), 403
        return None

    @sock.route("/api/v1/events")
    def events_socket(ws) -> None:  # type: ignore[no-untyped-def]
        with contextlib.suppress(*GONE):  # the client left; there is no one to tell
            _serve(ws, request.args.get("token"))


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


def _serve(ws, token: str | None) -> None:  # type: ignore[no-untyped-def]
    try:
        g.principal = check_scope(authenticate(token), None)
    except (Unauthorized, Forbidden) as exc:
        _close(ws, POLICY_VIOLATION, exc.code, exc.message)
        return
    except SQLAlchemyError as exc:
        log.warning("cannot check an events socket's token: %s", exc)
        _close(ws, INTERNAL_ERROR, "unavailable", "cannot check the token now")
        return
    rt = runtime()
    if rt.redis is None:
        _close(ws, NORMAL, "no_events", "live events need Redis; poll the API instead")
        return
    try:
        with event_bus.Subscription(rt.redis, g.principal.user_id) as stream:
            # Counted before "ready", so whoever reads the gauge after "ready" sees it.
            socket_opened()
            try:
                # Subscribed (and confirmed) first: nothing published from here on is lost.
                ws.send(json.dumps({"type": registry.EVENT_READY}))
                _relay(ws, stream, token)
            finally:
                socket_closed()
    except event_bus.EventsUnavailable as exc:
        log.info("events socket closed: %s", exc)
        _close(ws, INTERNAL_ERROR, "events_unavailable", "live events are unavailable now")


def _relay(ws, stream: event_bus.Subscription, token: str | None) -> None:  # type: ignore[no-untyped-def]
    """Send the user's events until the client leaves or its token stops being valid;
    `EventsUnavailable` when the stream ends first."""
    checked = time.monotonic()
    while True:
        data = stream.next(POLL_SECONDS)
        if data is not None:
            ws.send(data)
        elif not ws.connected:
            return
        if stream.auth_changed or time.monotonic() - checked >= RECHECK_SECONDS:
            stream.auth_changed = False
            try:
                authenticate(token, cached=False)
            except Unauthorized as exc:
                _close(ws, POLICY_VIOLATION, exc.code, exc.message)
                return
            except SQLAlchemyError as exc:
                log.warning("cannot check an events socket's token: %s", exc)
                _close(ws, INTERNAL_ERROR, "unavailable", "cannot check the token now")
                return
            checked = time.monotonic()


def _close(ws, status: int, code: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """Say why, then close with `status` (the client may already be gone)."""
    try:
        ws.send(_error(code, message))
        ws.close(reason=status, message=message)
    except GONE:
        pass


def _error(code: str, message: str) -> str:
    return json.dumps({"type": registry.EVENT_ERROR, "error": {"code": code, "message": message}})
