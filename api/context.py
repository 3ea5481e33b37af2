"""Request context: the runtime, the authenticated principal, and the auth decorators.

A caller authenticates with `Authorization: Bearer <token>` (or `x-api-key: <token>`, as
Anthropic's clients send it) or, from a browser, with the session cookie set by
`POST /auth/session` (`session_cookie_name`). A cookie rides along on requests other sites
trigger, so a state-changing request authenticated by it must also carry the sign-in's CSRF
token in `X-CSRF-Token` (a page of another origin cannot read it); bearer and x-api-key
requests need nothing more, since no browser adds those headers on its own.

An API key made with scopes (shared.accounts.SCOPES) may call only the routes that name one
of them (`scope_required`); every other route, the events socket and /v1 refuse it with 403
`missing_scope`, saying which scope the call needs or that it needs a key without scopes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Flask, current_app, g, request

from shared.accounts import people
from shared.accounts.people import Principal
from shared.core.errors import Forbidden, Unauthorized
from shared.core.settings import Settings
from shared.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])
EXTENSION = "eonyx"  # the key of the app's Runtime in `app.extensions`
SESSION_COOKIE = "eonyx_session"
SECURE_SESSION_COOKIE = "__Host-" + SESSION_COOKIE
CSRF_HEADER = "X-CSRF-Token"
API_KEY_HEADER = "x-api-key"  # Anthropic's clients send their key here, not as a bearer
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a sign-in whose password an administrator reset may still do (with DELETE
# /auth/session, which checks its cookie itself): change the password, or sign out.
PASSWORD_CHANGE_PATHS = frozenset({"/api/v1/me/password", "/api/v1/auth/logout"})


def runtime_of(app: Flask) -> Runtime:
    """The runtime an app was built with (tests and benches reach it from the app)."""
    return app.extensions[EXTENSION]


def runtime() -> Runtime:
    """The runtime of the app handling the current request."""
    return runtime_of(current_app)  # type: ignore[arg-type]


def principal() -> Principal:
    return g.principal


def session_cookie_name() -> str:
    """`__Host-eonyx_session` over https: a browser keeps a `__Host-` cookie only when it is
    Secure, has `Path=/` and no Domain, so a page on another port or subdomain of the host
    cannot plant one (with `path=/api/v1`, say) to sign the victim in to the attacker's
    account. Plain http (a server on localhost) keeps `eonyx_session`: browsers refuse
    `__Host-` without Secure. Over https the plain name is ignored."""
    return SECURE_SESSION_COOKIE if request.is_secure else SESSION_COOKIE


def session_cookie() -> str:
    """The session cookie's value on this request ("" without one)."""
    return request.cookies.get(session_cookie_name(), "").strip()


def presented_token(fallback_token: str | None = None) -> tuple[str, bool]:
    """The token the request authenticates with, and whether it is the session cookie's:
    `Authorization: Bearer <token>`, else `x-api-key: <token>` (how Anthropic's clients send
    their key), else `fallback_token` (for clients such as browsers' WebSockets that cannot
    send headers), else the cookie. ("", False) when there is none."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip(), False
    if key := request.headers.get(API_KEY_HEADER, "").strip():
        return key, False
    if fallback_token and fallback_token.strip():
        return fallback_token.strip(), False
    cookie = session_cookie()
    return cookie, bool(cookie)


def check_presented(fallback_token: str | None = None, *, cached: bool = True) -> Principal:
    """The principal behind the request's token, checked once per request: the rate
    limiter asks first (a valid token has its own budget), and the view's `authenticate`
    then takes the answer instead of asking again. `cached=False` skips the process's token
    cache (shared.accounts.token_cache) and asks the database."""
    token, by_cookie = presented_token(fallback_token)
    if not token:
        raise Unauthorized("sign in, or send 'Authorization: Bearer <token>'", code="missing_token")
    rt = runtime()
    found = people.authenticate(
        rt.db, rt.tokens, token, now=rt.clock.now(), from_cookie=by_cookie, cached=cached
    )
    g.checked_principal = (token, by_cookie, found)
    return found


def authenticate(fallback_token: str | None = None, *, cached: bool = True) -> Principal:
    """The caller behind the request's token (see `presented_token`). A state-changing
    request authenticated by the cookie must also pass `check_csrf`. An answer the rate
    limiter got for this request is used once; any later call asks again (an open socket's
    recheck with `cached=False`: from the database)."""
    token, by_cookie = presented_token(fallback_token)
    checked = g.pop("checked_principal", None)
    if checked is not None and checked[:2] == (token, by_cookie):
        found = checked[2]
    else:
        found = check_presented(fallback_token, cached=cached)
        g.pop("checked_principal", None)
    if by_cookie and request.method not in SAFE_METHODS:
        check_csrf(token)
    if found.must_change_password and request.path not in PASSWORD_CHANGE_PATHS:
        raise Forbidden(
            "an administrator reset your password: change it first (PUT /api/v1/me/password "
            "with the temporary one as current_password)",
            code="password_change_required",
        )
    return found


def check_csrf(session_token: str) -> None:
    """Refuse (403 `csrf_failed`) a request whose `X-CSRF-Token` is not the sign-in's."""
    given = request.headers.get(CSRF_HEADER, "")
    if not given or not people.csrf_matches(session_token.strip(), given):
        raise Forbidden(
            f"this request needs the {CSRF_HEADER} header of your sign-in (GET "
            "/api/v1/auth/session gives it); reload the page and try again",
            code="csrf_failed",
        )


def check_scope(found: Principal, scope: str | None) -> Principal:
    """`found`, if it may make a call needing `scope` (None: a call no scope allows, which
    only a key without scopes may make); 403 `missing_scope` otherwise."""
    if found.scopes is None or (scope is not None and scope in found.scopes):
        return found
    has = ", ".join(sorted(found.scopes)) or "none"
    needs = f"the scope {scope!r}" if scope else "an API key without scopes (full access)"
    raise Forbidden(
        f"this API key is limited to the scopes {has}; this call needs {needs}",
        code="missing_scope",
    )


def login_required(view: F) -> F:
    """Any caller with full access: a scoped API key is refused (see `scope_required`)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.principal = check_scope(authenticate(), None)
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def scope_required(scope: str) -> Callable[[F], F]:
    """Any caller with full access, or an API key given `scope`."""
    if scope not in people.SCOPES:
        raise ValueError(f"unknown scope {scope!r}")

    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            g.principal = check_scope(authenticate(), scope)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def any_key_required(view: F) -> F:
    """Any valid token, whatever its scopes (a key asking what it may do)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.principal = authenticate()
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def admin_required(view: F) -> F:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.principal = check_scope(authenticate(), None)
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
