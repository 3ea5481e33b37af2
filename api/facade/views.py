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

from api.context import login_required, principal, runtime
from api.errors import render_error
from api.extensions import Blueprint
from api.facade import SESSION_HEADER
from api.facade.errors import OPENAI_ERRORS, handle_errors_of, openai_error
from api.facade.models import model_object
from api.facade.schemas import CompletionRequestSchema
from shared.chat import turns
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations import facade
from shared.llm import catalog
from shared.storage.session_store import content_text

log = logging.getLogger(__name__)
blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
handle_errors_of(blp)


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
            "data": [model_object(o) for o in offerings],
        }
