"""Errors of the Anthropic-compatible routes (`/v1/messages`) in Anthropic's shape,
`{"type": "error", "error": {"type", "message"}}` (with Eonyx's `code` beside them), so that
the `anthropic` SDK raises its own exception for each status (`anthropic.BadRequestError`,
`NotFoundError` ...).

The OpenAI facade's handlers (api/facade/errors.py) decide the status and the message of
every error, parsing and routing included (a path under /v1/messages that no route takes,
a method its route does not take); this only reshapes their answer.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from flask_smorest import Blueprint
from werkzeug.exceptions import HTTPException

from api.facade.errors import Answer, domain_error, http_error, routing_error
from shared.core.errors import EonyxError

PREFIX = "/v1/messages"
ERROR = "error"  # the `type` of Anthropic's error body and stream event (not an Eonyx event)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def under_messages(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def anthropic_error(status: int, message: str, code: str | None) -> dict[str, Any]:
    """The body of an error answered with `status`; `code` is Eonyx's name for the error,
    beside Anthropic's fields (as the OpenAI shape has one), for a client that tells
    errors apart."""
    kind = ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    return {"type": ERROR, "error": {"type": kind, "message": message, "code": code}}


def reshaped(answer: Answer) -> Answer:
    """An answer of the OpenAI facade's handlers in Anthropic's shape."""
    body, status, headers = answer
    error = body["error"]
    return anthropic_error(status, error["message"], error["code"]), status, headers


def handle_errors_of(blueprint: Blueprint) -> None:
    """Anthropic's shape for the errors of this blueprint's views (see the facade's own)."""
    blueprint.register_error_handler(EonyxError, lambda exc: reshaped(domain_error(exc)))
    blueprint.register_error_handler(HTTPException, lambda exc: reshaped(http_error(exc)))


def _routing_error() -> Answer | None:
    answer = routing_error() if under_messages(request.path) else None
    return reshaped(answer) if answer is not None else None


def register_messages_routing_errors(app: Flask) -> None:
    """Anthropic's shape for a path under /v1/messages that routing refused (404, 405).
    Registered before the facade's own hook, which would answer it in OpenAI's shape."""
    app.before_request(_routing_error)
