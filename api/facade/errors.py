"""Every error of the OpenAI-compatible facade (`/v1`) in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`, so that OpenAI client libraries raise
their own exceptions (`openai.NotFoundError` ...) with `.code` and `.param` set.

The rest of the API keeps Eonyx's shape (api/errors.py, api/extensions.py); only the status
and the shape differ here, the message is the same. Three sources of errors:

- what a facade view raises: domain errors, rate limits, and the HTTP errors of parsing
  (a body that is not JSON is a 400 `invalid_json`, one sent as another media type a 415, a
  body the schema refuses a 400 `invalid_request` naming the first bad field as `param`);
- what routing finds before any view runs: an unknown path under `/v1` (404 `unknown_url`)
  and a method the path does not take (405 with `Allow`). Flask hands those to app-level
  handlers, which speak Eonyx's shape, so a before-request hook answers them for `/v1`;
- `openai_error` for a view that names its own error.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from flask_smorest import Blueprint
from werkzeug.exceptions import HTTPException

from api.errors import error_headers, render_error
from api.extensions import HTTP_CODES, LOCATIONS, field_problems
from api.facade import under_facade
from api.facade.schemas import OpenAIErrorSchema
from shared.core.errors import EonyxError

ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
# The facade's errors are OpenAI's, not the rest of the API's (the default flask-smorest adds).
OPENAI_ERRORS = {
    "default": {
        "description": "An error, in OpenAI's shape",
        "content": {"application/json": {"schema": OpenAIErrorSchema}},
    }
}
Answer = tuple[dict[str, Any], int, dict[str, str]]


def openai_error(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    """The body of an error answered with `status`; `param` names the request field at fault."""
    kind = ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def domain_error(exc: EonyxError) -> Answer:
    body, status = render_error(exc)
    error = body["error"]
    answer = openai_error(status, error["code"], error["message"], exc.param)
    if "details" in error:  # the figures of a refusal (a budget, a quota), beside OpenAI's
        answer["error"]["details"] = error["details"]
    return answer, status, error_headers(exc, status)


def http_error(exc: HTTPException) -> Answer:
    """An HTTP error (from parsing, routing or `abort`) in OpenAI's shape."""
    status = exc.code or 500
    data = getattr(exc, "data", None) or {}
    # werkzeug's own headers (`Allow` on a 405), without its HTML content type
    headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
    headers.update(data.get("headers") or {})
    messages = data.get("messages") or {}
    if status == 422 and messages:  # a body the schema refused: OpenAI calls that a 400
        problems = field_problems(messages)
        message = data.get("message") or "; ".join(
            f"{name}: {text}" if name else text for name, text in problems
        )
        param = next((name for name, _ in problems if name and name not in LOCATIONS), None)
        return openai_error(400, "invalid_request", message, param), 400, headers
    code = data.get("error_code") or HTTP_CODES.get(status) or "error"
    message = data.get("message") or _describe(status, exc)
    return openai_error(status, code, message), status, headers


def _describe(status: int, exc: HTTPException) -> str:
    if status == 404:
        return f"unknown request URL: {request.method} {request.path}"
    if status == 405:
        methods = set(getattr(exc, "valid_methods", None) or ()) - {"HEAD", "OPTIONS"}
        allowed = ", ".join(sorted(methods))
        return f"{request.method} is not allowed on {request.path} (use {allowed})"
    if status == 413:
        return "the request body is too large"
    return exc.description or exc.name


def routing_error() -> Answer | None:
    """A path under /v1 that no route serves, or a method its route does not take."""
    exc = request.routing_exception
    if not under_facade(request.path) or not isinstance(exc, HTTPException):
        return None
    if (exc.code or 0) < 400:
        return None  # a redirect (a missing or extra slash) is no error
    body, status, headers = http_error(exc)
    if status == 404:
        body["error"]["code"] = "unknown_url"
    return body, status, headers


def handle_errors_of(blueprint: Blueprint) -> None:
    """OpenAI's shape for the errors of this blueprint's views. Called once, where the
    blueprint is made: Flask takes no handler on a blueprint once an app registered it."""
    blueprint.register_error_handler(EonyxError, domain_error)
    blueprint.register_error_handler(HTTPException, http_error)


def register_routing_errors(app: Flask) -> None:
    """OpenAI's shape for a path under /v1 that routing refused (404, 405)."""
    app.before_request(routing_error)
