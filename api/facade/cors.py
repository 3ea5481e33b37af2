"""CORS for the OpenAI-compatible facade (`/v1`), so that a browser page of another origin
can use Eonyx as its OpenAI endpoint.

Only `/v1` is cross-origin: the browser client's routes under `/api/v1`, which a cookie
authenticates, stay same-origin (they answer no CORS header at all). A page calling `/v1`
sends its key as `Authorization: Bearer`; no answer allows credentials, so a browser never
reads an answer to a request it sent with this server's cookie, and `*` is a safe default
(`FACADE_CORS_ORIGINS`).

- A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed
  origin is answered 204 here, before authentication and the rate limits (the browser sends no
  key with it), with the methods the path takes, the headers the facade reads plus whatever
  the browser asks for, and a Max-Age so that it is not repeated for every request. A path the
  facade does not know is allowed the method asked, so that the real request gets its 404 in
  OpenAI's shape instead of a CORS failure.
- Every other `/v1` answer (errors and streams included) names the allowed origin and exposes
  `X-Eonyx-Session`, the header that names the session.
- With `*` every origin is answered `*`; with a list, a listed `Origin` is echoed with
  `Vary: Origin`, and any other origin gets no CORS header (the browser then refuses it).
"""

from __future__ import annotations

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

from api.context import runtime
from api.facade import IGNORED_HEADER, SESSION_HEADER, TEMPORARY_HEADER, under_facade

# What the facade reads from a request; a preflight also allows what the browser asks for.
ALLOWED_HEADERS = ("Authorization", "Content-Type", SESSION_HEADER, TEMPORARY_HEADER)
EXPOSED_HEADERS = (SESSION_HEADER, IGNORED_HEADER)
MAX_AGE_SECONDS = 7200  # Chromium's ceiling; Firefox allows a day


def allowed_origin(origin: str | None) -> str | None:
    """What `Access-Control-Allow-Origin` answers to `origin`, or None for no CORS header."""
    setting = runtime().settings.facade_cors_origins
    if setting == "*":
        return "*"
    if origin and origin.lower() in setting.split(","):
        return origin
    return None


def _cors_headers(response: Response, origin: str) -> None:
    response.headers["Access-Control-Allow-Origin"] = origin
    if origin != "*":
        response.vary.add("Origin")


def _path_methods() -> list[str]:
    """The methods the requested path takes (empty when the facade has no such path)."""
    adapter = current_app.url_map.bind_to_environ(request.environ)
    try:
        return sorted(adapter.allowed_methods(request.path))
    except HTTPException:
        return []


def _preflight() -> Response | None:
    if request.method != "OPTIONS" or not under_facade(request.path):
        return None
    asked = request.headers.get("Access-Control-Request-Method")
    if not asked or "Origin" not in request.headers:
        return None  # a plain OPTIONS: Flask answers it with `Allow`
    response = current_app.response_class(status=204)
    origin = allowed_origin(request.headers["Origin"])
    if runtime().settings.facade_cors_origins != "*":
        response.vary.add("Origin")
    if origin is None:
        return response  # no CORS header: the browser refuses the request
    _cors_headers(response, origin)
    methods = _path_methods() or [asked.upper(), "OPTIONS"]
    response.headers["Access-Control-Allow-Methods"] = ", ".join(methods)
    requested = request.headers.get("Access-Control-Request-Headers", "")
    wanted = [name.strip() for name in requested.split(",") if name.strip()]
    known = {name.lower() for name in ALLOWED_HEADERS}
    extra = [name for name in wanted if name.lower() not in known]
    response.headers["Access-Control-Allow-Headers"] = ", ".join([*ALLOWED_HEADERS, *extra])
    response.headers["Access-Control-Max-Age"] = str(MAX_AGE_SECONDS)
    return response


def _response_headers(response: Response) -> Response:
    if not under_facade(request.path) or "Access-Control-Allow-Origin" in response.headers:
        return response
    if runtime().settings.facade_cors_origins != "*":
        response.vary.add("Origin")
    origin = allowed_origin(request.headers.get("Origin"))
    if origin is not None:
        _cors_headers(response, origin)
        response.headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSED_HEADERS)
    return response


def register_cors(app: Flask) -> None:
    """Wire CORS for `/v1`. Call it before the rate limits are registered: a preflight is
    answered by the first before-request hook that returns, and must not spend a budget."""
    app.before_request(_preflight)
    app.after_request(_response_headers)
