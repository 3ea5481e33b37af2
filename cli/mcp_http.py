"""`eonyx mcp --http`: the streamable-HTTP transport at `/mcp`, and who may use it.

Every request to `/mcp` is let through only with an Eonyx API key the API accepts
(`GET /api/v1/tokens/current` with it as the bearer): asked before a session is opened
and on every later request, stateful or stateless, and trusted for MCP_KEY_CHECK_SECONDS
after a yes (keyed by the key's SHA-256), so a revoked key stops working here within that
time. A missing or refused key is answered 401 with `WWW-Authenticate: Bearer realm="eonyx",
error="invalid_token", error_description="..."` and a JSON-RPC error body an MCP client shows
as it is; an API that cannot be reached, 503. Nothing here speaks OAuth: Eonyx keys are static
bearer tokens, so no `resource_metadata` is advertised and `/.well-known/oauth-*`,
`/authorize`, `/token` and `/register` are not found (404), which is what tells a client
such as MCP Inspector to stop looking for an authorization server.

A session belongs to the key that opened it (`KeyedSessions`), and a key may hold at most
MCP_SESSIONS_PER_KEY open sessions; the SDK's overall cap (10,000) stays. Sessions idle out
after 30 minutes (the SDK's default) or end with the client's DELETE.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cli.api_error import ApiError
from cli.mcp_server import Accesses, bearer_of, build_server, key_id

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

REALM = "eonyx"
INVALID_REQUEST = -32600  # JSON-RPC's code, as the SDK gives it to its own HTTP-level refusals
UNAVAILABLE_RETRY_SECONDS = 5
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class KeyFull(Exception):
    """The key already holds as many open sessions as it may."""

    def __init__(self, open_sessions: int) -> None:
        super().__init__(open_sessions)
        self.open_sessions = open_sessions


class KeyedSessions(StreamableHTTPSessionManager):
    """The SDK's session manager with a cap on the sessions one key holds.

    Each request reaches it with `scope["user"]` naming the key's hash (`authenticate`
    below), which the SDK stores with the session it opens and compares on every later
    request: a session id presented with another key is answered 404 "Session not found",
    exactly as an unknown or expired one. 404, not 403, because that is what the MCP spec
    gives a session the server does not know (the client then starts a new session with its
    own key), it is what the SDK does for a credential that is not the session's, and it says
    nothing about whether someone else's session exists.

    At the cap a new session is refused with 429 and a message saying why, rather than
    the oldest idle one being closed under an agent that may come back to it: a person
    expects the thing they just asked for to be refused, not one they left open earlier.
    The count is made under the SDK's admission lock, so concurrent opens cannot pass it.
    """

    def __init__(self, *args: Any, per_key: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.per_key = per_key

    def _admit_session(self, requestor: AuthorizationContext | None) -> Any:
        if requestor is not None:
            held = sum(1 for owner in self._session_owners.values() if owner == requestor)
            if held >= self.per_key:
                raise KeyFull(held)
        return super()._admit_session(requestor)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super()._handle_stateful_request(scope, receive, send)
        except KeyFull as full:  # raised before anything was sent
            message = (
                f"this API key already has {full.open_sessions} open MCP sessions, the most "
                f"one key may hold (MCP_SESSIONS_PER_KEY); end one (DELETE /mcp with its "
                f"Mcp-Session-Id), or wait for one to idle out (30 minutes)"
            )
            await refusal(429, "too_many_sessions", message)(scope, receive, send)


def refusal(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    """A JSON-RPC error (no id) at an HTTP status: the SDK's own shape for HTTP-level
    refusals, whose message an MCP client shows; `data.code` names the reason."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": message, "data": {"code": code}},
    }
    return Response(json.dumps(body), status, headers, media_type="application/json")


def unauthorized(code: str, message: str) -> Response:
    """401 with the challenge MCP clients read: a bearer token, no authorization server."""
    description = message.replace("\\", "").replace('"', "'")
    challenge = f'Bearer realm="{REALM}", error="invalid_token", error_description="{description}"'
    return refusal(401, code, message, {"WWW-Authenticate": challenge})


def key_refused(url: str, exc: ApiError) -> Response:
    """What the API's answer about a key means for the agent that presented it."""
    if exc.status == 429:
        return refusal(429, exc.code or "rate_limited", exc.reason, {"Retry-After": "60"})
    if 400 <= exc.status < 500:
        return unauthorized(
            exc.code or "invalid_token", f"the Eonyx API refused this key: {exc.reason}"
        )
    why = exc.reason if exc.status == 0 else f"the API at {url} answered {exc.status}: {exc.reason}"
    message = f"the key could not be checked ({why}); try again shortly"
    retry = {"Retry-After": str(UNAVAILABLE_RETRY_SECONDS)}
    return refusal(503, "api_unavailable", message, retry)


def authenticate(app: Callable[[Scope, Receive, Send], Awaitable[None]], accesses: Accesses) -> Any:
    """The ASGI app in front of `app`: `/mcp` only with a key the API accepts."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            token = bearer_of(headers)
            if not token:
                message = "send an Eonyx API key: 'Authorization: Bearer eyx_...'"
                await unauthorized("missing_token", message)(scope, receive, send)
                return
            try:
                access = await accesses.verify(token)
            except ApiError as exc:
                await key_refused(accesses.url, exc)(scope, receive, send)
                return
            whose = key_id(token)
            scope["user"] = AuthenticatedUser(
                AccessToken(token=whose, client_id=whose, scopes=sorted(access.scopes))
            )
        await app(scope, receive, send)

    return guarded


def http_app(
    url: str, *, stateless: bool, host: str, sessions_per_key: int, key_check_seconds: float
) -> Any:
    """The streamable-HTTP app: `/mcp` (an accepted Eonyx API key required), and `/healthz`."""
    accesses = Accesses(url, ttl=key_check_seconds)
    server = build_server(accesses, stdio=False)
    security = None
    if host in LOCAL_HOSTS:  # as the SDK's own app: DNS rebinding protection on loopback
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    sessions = KeyedSessions(
        server, stateless=stateless, security_settings=security, per_key=sessions_per_key
    )

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with sessions.run():
                yield
        finally:
            await accesses.aclose()

    app = Starlette(
        routes=[
            Route("/mcp", StreamableHTTPASGIApp(sessions)),
            Route("/healthz", healthz),
        ],
        lifespan=lifespan,
    )
    return authenticate(app, accesses)
