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
        fields = _field_paths(details)
        if status == 400 and fields == ["json"]:
            return "the request body is not valid JSON"
        return "invalid request: " + ", ".join(fields) if fields else "invalid request"
    if status == 413:
        return "the request body is too large"
    return error.description or error.name


def _field_paths(details: Any, prefix: str = "") -> list[str]:
    """`json.title`-style names of the fields a validation error is about."""
    if not isinstance(details, dict):
        return [prefix] if prefix else []
    paths: list[str] = []
    for key, value in details.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        nested = (
            isinstance(value, dict)
            and value
            and all(isinstance(v, (dict, list)) for v in value.values())
        )
        paths.extend(_field_paths(value, name) if nested else [name])
    return paths
