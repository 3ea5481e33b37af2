"""Request context: the runtime, the authenticated principal, and the auth decorators."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Flask, current_app, g, request

from shared import accounts
from shared.accounts import Principal
from shared.core.errors import Forbidden, Unauthorized
from shared.core.settings import Settings
from shared.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])
EXTENSION = "eonyx"  # the key of the app's Runtime in `app.extensions`


def runtime_of(app: Flask) -> Runtime:
    """The runtime an app was built with (tests and benches reach it from the app)."""
    return app.extensions[EXTENSION]


def runtime() -> Runtime:
    """The runtime of the app handling the current request."""
    return runtime_of(current_app)  # type: ignore[arg-type]


def principal() -> Principal:
    return g.principal


def authenticate(fallback_token: str | None = None) -> Principal:
    """The caller behind `Authorization: Bearer <token>` (or `fallback_token`, for clients
    such as browsers' WebSockets that cannot send headers)."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        token = fallback_token or ""
    if not token.strip():
        raise Unauthorized("send 'Authorization: Bearer <token>'", code="missing_token")
    with runtime().db.session() as db:
        return accounts.authenticate(db, token.strip())


def login_required(view: F) -> F:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.principal = authenticate()
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def admin_required(view: F) -> F:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.principal = authenticate()
        if not g.principal.is_admin:
            raise Forbidden("this needs an administrator")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def body_limit(limit: Callable[[Settings], int]) -> Callable[[F], F]:
    """Let this view's request body grow to `limit(settings)` bytes instead of the app's
    MAX_REQUEST_BYTES (werkzeug enforces it while the body streams in: a Content-Length
    above it is refused before anything is read, and a chunked body once it passes it).
    Put it above the decorators that parse the body."""

    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            allowed = limit(runtime().settings)
            request.max_content_length = allowed
            request.max_form_memory_size = runtime().settings.max_request_bytes
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
