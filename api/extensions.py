"""The flask-smorest `Api` and `Blueprint` of Eonyx: its error format
{"error": {"code", "message", "details"?}}, and the limits every request body meets before
marshmallow sees it.

- A body is read by the domain's one JSON reader (shared.core.encoding.decode_json): one
  that is malformed, nested deeper than MAX_JSON_DEPTH, or holds a number Python cannot read
  (an integer of more than 4,300 digits, `1e999`, `NaN`) is a 400 `invalid_json` saying why;
  a body not sent as JSON is refused with a 415 instead of being read as no body; a request
  whose body is required refuses a missing one with a 422.
- A validation error's message names each field and says what is wrong with it
  (`content: longer than maximum length 200000`), so every client can show it as it is.
- Responses are encoded with orjson (`FastJSONProvider`), the JSON Flask would write.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import flask_smorest
import marshmallow as ma
from flask import request
from flask.json.provider import DefaultJSONProvider
from flask_smorest import Api
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request
from werkzeug.exceptions import HTTPException

from shared.core.encoding import InvalidJSON, decode_json, encode_json

# One code per HTTP status for errors that do not come from the domain.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
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


class EonyxParser(FlaskParser):
    """webargs' parser with the body limits of this module."""

    def _raw_load_json(self, req: Any) -> Any:
        data = req.get_data(cache=True)
        if not is_json_request(req):
            if data:
                abort(415, message="send the request body as JSON (Content-Type: application/json)")
            return core.missing
        if not data:
            return core.missing
        try:
            return decode_json(data, what="the request body")
        except InvalidJSON as exc:
            abort(400, message=exc.message, error_code=exc.code)


class Blueprint(flask_smorest.Blueprint):
    """Every blueprint of the API: Eonyx's parser, and a required body that is really required."""

    ARGUMENTS_PARSER = EonyxParser()

    def arguments(  # type: ignore[override]
        self,
        schema: Any,
        *,
        location: str = "json",
        required: bool = True,
        multipart: bool = False,
        **kwargs: Any,
    ) -> Callable[..., Any]:
        """`multipart`: the view also takes multipart/form-data, which it reads itself (it is
        called with an empty body then); any other body must be JSON. A schema class is made
        an instance here, once: given the class, webargs builds a new one for every request
        (a deep copy of every field)."""
        if isinstance(schema, type):
            schema = schema()
        decorator = super().arguments(schema, location=location, required=required, **kwargs)
        if location != "json" or not (required or multipart):
            return decorator

        def wrap(view: Callable[..., Any]) -> Callable[..., Any]:
            parsed = decorator(view)

            @wraps(parsed)
            def needs_body(*args: Any, **kw: Any) -> Any:
                if multipart and request.mimetype == "multipart/form-data":
                    return view(*args, {}, **kw)
                if required and not request.get_data(cache=True):
                    abort(
                        422,
                        message="this request needs a JSON body",
                        messages={"json": ["a JSON body is required"]},
                    )
                return parsed(*args, **kw)

            return needs_body

        return wrap


COMPACT = (",", ":")  # the separators Flask passes for a response when not in debug


class FastJSONProvider(DefaultJSONProvider):
    """Flask's JSON through `encode_json` (orjson): the same values, keys sorted as Flask
    sorts them, dates and dataclasses written by Flask's own `default`; a page of 50
    sessions encodes about seven times faster. A response asks for compact separators,
    which orjson writes anyway; other options (an indent in debug) go to Flask's."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if kwargs and kwargs != {"separators": COMPACT}:
            return super().dumps(obj, **kwargs)
        return encode_json(obj, default=self.default, sort_keys=self.sort_keys).decode()


class EonyxApi(Api):
    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: HTTPException):  # type: ignore[no-untyped-def]
        status = error.code or 500
        data = getattr(error, "data", None) or {}
        details = data.get("errors") or data.get("messages")
        message = data.get("message") or _describe(status, details, error)
        code = data.get("error_code") or HTTP_CODES.get(status, "error")
        # werkzeug's own headers first (`Allow` on a 405), without its HTML content type
        headers = {k: v for k, v in error.get_headers() if k.lower() != "content-type"}
        headers.update(data.get("headers") or {})
        return error_payload(code, message, details), status, headers


def _describe(status: int, details: Any, error: HTTPException) -> str:
    if details:
        return validation_message(details)
    if status == 413:
        return "the request body is too large"
    if status == 404:  # werkzeug's "The requested URL was not found on the server. If you..."
        return f"nothing at {request.method} {request.path}: check the address and the id"
    return error.description or error.name


def validation_message(details: Any) -> str:
    """A validation error as one sentence naming each field: `content: longer than maximum
    length 200000` (never marshmallow's dict as Python prints it)."""
    problems = field_problems(details)
    if not problems:
        return "invalid request"
    return "; ".join(f"{name}: {text}" if name else f"body: {text}" for name, text in problems)


LOCATIONS = ("json", "query", "path", "view_args", "headers", "form", "files", "cookies")


def field_problems(details: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(`project_context.0.content`-style field name, what is wrong) for each problem of a
    validation error; the location (`json`, `query`) is left out of the name."""
    found: list[tuple[str, str]] = []
    if isinstance(details, list):
        texts = [_sentence(item) for item in details if isinstance(item, str)]
        found = [(prefix, "; ".join(texts))] if texts else []
        for item in details:
            if isinstance(item, dict):
                found.extend(field_problems(item, prefix))
        return found or [(prefix, "invalid")]
    if not isinstance(details, dict):
        return [(prefix, _sentence(str(details)))]
    for key, value in details.items():
        if not prefix and key in LOCATIONS and isinstance(value, dict):
            found.extend(field_problems(value, ""))
            continue
        # "_schema" is marshmallow's key for the object as a whole
        name = prefix if key == "_schema" else f"{prefix}.{key}" if prefix else str(key)
        found.extend(field_problems(value, name))
    return found


def _sentence(text: str) -> str:
    """marshmallow's "Longer than maximum length 200000." as "longer than maximum length
    200000", to follow a field name."""
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) == 1 else text
