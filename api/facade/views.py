"""The OpenAI-compatible facade: `POST /v1/chat/completions` and `GET /v1/models`.

Existing OpenAI client libraries work unchanged with an Eonyx API key as their key and Eonyx's
URL + `/v1` as their base URL. Every response names its session in `X-Eonyx-Session`; errors
come in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator
from typing import Any

from flask import Response, request, stream_with_context
from flask.views import MethodView
from flask_limiter import RateLimitExceeded
from flask_smorest import Blueprint
from werkzeug.exceptions import HTTPException

from api.context import login_required, principal, runtime
from api.errors import render_error
from api.facade.schemas import CompletionRequestSchema, OpenAIErrorSchema
from api.ratelimit import limit_message, retry_after_seconds
from shared.chat import turns
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations import facade
from shared.llm import catalog
from shared.storage.session_store import content_text

log = logging.getLogger(__name__)
blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
SESSION_HEADER = "X-Eonyx-Session"
ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def openai_error(status: int, code: str, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@blp.errorhandler(EonyxError)
def _domain_error(exc: EonyxError) -> tuple[dict[str, Any], int]:
    body, status = render_error(exc)
    return openai_error(status, body["error"]["code"], body["error"]["message"]), status


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


def _completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


@blp.route("/chat/completions")
class ChatCompletions(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.arguments(CompletionRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        rt, who = runtime(), facade.caller(principal())
        conversation = facade.read_messages(body["messages"])
        model = body["model"]
        session_id, _ = facade.choose_session(
            rt, who, conversation, request.headers.get(SESSION_HEADER), model
        )
        turn = turns.TurnRequest(content=conversation.content, offering=model)
        headers = {SESSION_HEADER: session_id}
        if not body["stream"]:
            result = turns.run_turn(rt, who, session_id, turn)
            answer = content_text(result.assistant_message.get("content"))
            facade.remember(rt, who, session_id, conversation, answer)
            return _completion(model, answer), 200, headers
        events = turns.iter_turn(rt, who, session_id, turn, stream=True)
        first = next(events)  # errors before the model speaks are plain JSON errors

        def done(answer: str) -> None:
            facade.remember(rt, who, session_id, conversation, answer)

        return Response(
            stream_with_context(_chunks(model, first, events, done)),
            mimetype="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


def _completion(model: str, answer: str) -> dict[str, Any]:
    return {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
    }


def _chunks(model: str, first: Any, rest: Iterator[Any], done: Any) -> Iterator[str]:
    """`chat.completion.chunk` events, then `[DONE]`; an error event if the turn fails."""
    base = {"id": _completion_id(), "object": "chat.completion.chunk", "model": model}

    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        data = {**base, "created": int(time.time()), "choices": [choice]}
        return sse.encode(data)

    yield event({"role": "assistant", "content": ""})
    item = first
    try:
        while not isinstance(item, turns.TurnResult):
            if isinstance(item, turns.TextDelta):  # steps have no place in OpenAI's chunks
                yield event({"content": item.text})
            item = next(rest)
        done(content_text(item.assistant_message.get("content")))
        yield event({}, "stop")
        yield sse.frame("[DONE]")
    except EonyxError as exc:
        body, status = render_error(exc)
        error = openai_error(status, body["error"]["code"], body["error"]["message"])
        yield sse.encode(error)
    except Exception:  # the headers are sent: the stream itself must say what went wrong
        log.exception("a streamed facade turn failed")
        error = openai_error(500, "internal_error", "the turn failed on the server")
        yield sse.encode(error)


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
