"""The OpenAI-compatible facade: `POST /v1/chat/completions` and `GET /v1/models`.

Existing OpenAI client libraries work unchanged with an Eonyx API key as their key and Eonyx's
URL + `/v1` as their base URL. Every response names its session in `X-Eonyx-Session`; errors
come in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Response, request, stream_with_context
from flask.views import MethodView
from flask_limiter import RateLimitExceeded
from flask_smorest import Blueprint
from werkzeug.exceptions import HTTPException

from api.context import login_required, principal, runtime
from api.errors import render_error
from api.facade.completions import completion_body, completion_chunks
from api.facade.schemas import CompletionRequestSchema, OpenAIErrorSchema
from api.ratelimit import limit_message, retry_after_seconds
from shared.chat import turns
from shared.core.errors import EonyxError
from shared.integrations import facade
from shared.integrations.openai_request import read_chat_request
from shared.llm import catalog

log = logging.getLogger(__name__)
blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
SESSION_HEADER = "X-Eonyx-Session"
TEMPORARY_HEADER = "X-Eonyx-Temporary"
ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def openai_error(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@blp.errorhandler(EonyxError)
def _domain_error(exc: EonyxError) -> tuple[dict[str, Any], int]:
    body, status = render_error(exc)
    error = openai_error(status, body["error"]["code"], body["error"]["message"], exc.param)
    return error, status


@blp.errorhandler(RateLimitExceeded)
def _rate_limited(exc: RateLimitExceeded) -> tuple[dict[str, Any], int, dict[str, str]]:
    headers = {"Retry-After": str(retry_after_seconds())}
    return openai_error(429, "rate_limited", limit_message(exc)), 429, headers


@blp.errorhandler(HTTPException)
def _http_error(exc: HTTPException) -> tuple[dict[str, Any], int]:
    status = exc.code or 500
    messages = (getattr(exc, "data", None) or {}).get("messages")
    if status == 422 and messages:  # a body the schema refused: OpenAI calls that a 400
        fields = [f"{key}" for loc in messages.values() for key in loc]
        message = "invalid request: " + ", ".join(fields)
        return openai_error(400, "invalid_request", message), 400
    return openai_error(status, exc.name.lower().replace(" ", "_"), exc.description or ""), status


# The facade's errors are OpenAI's, not the rest of the API's (the default flask-smorest adds).
OPENAI_ERRORS = {
    "default": {
        "description": "An error, in OpenAI's shape",
        "content": {"application/json": {"schema": OpenAIErrorSchema}},
    }
}


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@blp.route("/chat/completions")
class ChatCompletions(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.arguments(CompletionRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        rt, who = runtime(), facade.caller(principal())
        chat = read_chat_request(body)
        temporary = chat.temporary or _flag(request.headers.get(TEMPORARY_HEADER))
        where = facade.choose_session(
            rt, who, chat, request.headers.get(SESSION_HEADER), temporary=temporary
        )
        headers = {SESSION_HEADER: where.session_id}
        try:
            planned = facade.plan_turn(chat, where)
            if not chat.stream:
                result = turns.run_turn(rt, who, where.session_id, planned.request)
                facade.remember(rt, who, planned)
                return completion_body(chat.model, result), 200, headers
            events = turns.iter_turn(rt, who, where.session_id, planned.request, stream=True)
            first = next(events)  # errors before the model speaks are plain JSON errors
        except BaseException:
            facade.forget_unused(rt, who, where)
            raise

        chunks = completion_chunks(
            chat.model,
            first,
            events,
            include_usage=chat.include_usage,
            done=lambda _result: facade.remember(rt, who, planned),
            error_body=openai_error,
        )
        return Response(
            stream_with_context(chunks),
            mimetype="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


@blp.route("/models")
class Models(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.response(200)
    def get(self) -> dict[str, Any]:
        rt = runtime()
        with rt.db.session() as db:
            offerings = catalog.list_offerings(db, rt.settings)
        return {
            "object": "list",
            "data": [
                {"id": o.id, "object": "model", "created": 0, "owned_by": "eonyx"}
                for o in offerings
            ],
        }
