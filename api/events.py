"""GET /api/v1/events: a WebSocket that pushes the caller's live events.

Browsers cannot set headers on a WebSocket, so the token may also come as `?token=`. Without
Redis there is nothing to push and the socket closes with a message saying so; clients then
fall back to polling the API.
"""

from __future__ import annotations

import json

from flask import Flask, g, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed

from api.context import authenticate, runtime
from shared import events
from shared.errors import Unauthorized


def register_events(app: Flask) -> None:
    sock = Sock(app)

    @sock.route("/api/v1/events")
    def events_socket(ws) -> None:  # type: ignore[no-untyped-def]
        try:
            g.principal = authenticate(request.args.get("token"))
        except Unauthorized as exc:
            ws.send(_error(exc.code, exc.message))
            ws.close(reason=1008)
            return
        rt = runtime()
        if rt.redis is None:
            ws.send(_error("no_events", "live events need Redis; poll the API instead"))
            ws.close()
            return
        ws.send(json.dumps({"type": "ready"}))
        try:
            for data in events.listen(rt.redis, g.principal.user_id):
                if data is not None:
                    ws.send(data)
                elif not ws.connected:
                    break
        except ConnectionClosed:
            pass


def _error(code: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"code": code, "message": message}})
