"""The flask-smorest `Api` with Eonyx's error format: {"error": {"code", "message", "details"?}}."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask_smorest import Api
from werkzeug.exceptions import HTTPException

# One code per HTTP status for errors that do not come from the domain.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal_error",
    502: "bad_gateway",
    503: "unavailable",
}


class ErrorBodySchema(ma.Schema):
    code = ma.fields.String(required=True)
    message = ma.fields.String(required=True)
    details = ma.fields.Dict()


class ErrorSchema(ma.Schema):
    error = ma.fields.Nested(ErrorBodySchema, required=True)


def error_payload(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return {"error": body}


class EonyxApi(Api):
    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: HTTPException):  # type: ignore[no-untyped-def]
        status = error.code or 500
        data = getattr(error, "data", None) or {}
        details = data.get("errors") or data.get("messages")
        message = data.get("message") or _describe(status, details, error)
        code = data.get("error_code") or _code_for(status, details)
        headers = data.get("headers") or {}
        return error_payload(code, message, details), status, headers


def _code_for(status: int, details: Any) -> str:
    if status == 400 and details and "json" in details and isinstance(details["json"], list):
        return "invalid_json"
    return HTTP_CODES.get(status, "error")


def _describe(status: int, details: Any, error: HTTPException) -> str:
    if details:
        reasons = _reasons(details)
        if status == 400 and [path for path, _ in reasons] == ["json"]:
            return "the request body is not valid JSON"
        if not reasons:
            return "invalid request"
        return "invalid request: " + "; ".join(
            f"{path}: {reason}" if reason else path for path, reason in reasons
        )
    if status == 413:
        return "the request body is too large"
    return error.description or error.name


def _reasons(details: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(`json.title`-style field name, the validator's words) for each field an error is
    about, so that every client can show why a request was refused."""
    if not isinstance(details, dict):
        return [(prefix, _words(details))] if prefix else []
    reasons: list[tuple[str, str]] = []
    for key, value in details.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        nested = (
            isinstance(value, dict)
            and value
            and all(isinstance(v, (dict, list)) for v in value.values())
        )
        reasons.extend(_reasons(value, name) if nested else [(name, _words(value))])
    return reasons


def _words(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value if isinstance(item, str))
    return value if isinstance(value, str) else ""
