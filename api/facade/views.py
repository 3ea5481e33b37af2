"""The OpenAI-compatible facade: `POST /v1/chat/completions` and `GET /v1/models`.

Existing OpenAI client libraries work unchanged with an Eonyx API key as their key and Eonyx's
URL + `/v1` as their base URL. Every response names its session in `X-Eonyx-Session`; errors
come in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.facade import SESSION_HEADER, answer_headers, asks_temporary
from api.facade.completions import completion_body, completion_chunks, error_chunk
from api.facade.errors import OPENAI_ERRORS, handle_errors_of
from api.facade.models import model_object
from api.facade.responses import ResponseStream
from api.facade.schemas import CompletionRequestSchema, ResponsesRequestSchema
from api.ratelimit import counts_as_turn
from api.streaming import event_stream
from shared.integrations import facade, responses
from shared.integrations.openai_request import read_chat_request
from shared.llm import access, models

blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
handle_errors_of(blp)


@blp.route("/chat/completions")
class ChatCompletions(MethodView):
    @counts_as_turn
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.arguments(CompletionRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        rt, who, chat = runtime(), facade.caller(principal()), read_chat_request(body)
        header = request.headers.get(SESSION_HEADER)
        run = facade.run_chat(rt, who, chat, header, temporary=asks_temporary())
        where = answer_headers(run.session_id, chat.ignored)
        if run.result is not None:
            return completion_body(chat.model, run.result), 200, where
        chunks = completion_chunks(chat.model, run.events, include_usage=chat.include_usage)
        return event_stream(chunks, error_chunk, where)


@blp.route("/responses")
class Responses(MethodView):
    @counts_as_turn
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.arguments(ResponsesRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        rt, who = runtime(), facade.caller(principal())
        header = request.headers.get(SESSION_HEADER)
        run = responses.run_response(rt, who, body, header, temporary=asks_temporary())
        where = answer_headers(run.turn.session_id, run.ignored)
        if run.turn.result is not None:
            return run.answer, 200, where
        stream = ResponseStream(run)
        return event_stream(stream.events(), stream.error_event, where)


@blp.route("/responses/<response_id:response_id>")
class StoredResponse(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.response(200)
    def get(self, response_id: str) -> dict[str, Any]:
        return responses.stored(runtime(), principal(), response_id)


@blp.route("/models")
class Models(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.response(200)
    def get(self) -> dict[str, Any]:
        """The offerings the caller may choose: for a plain user, neither those kept for
        groups they are in none of, nor those that only serve task roles."""
        rt = runtime()
        with rt.db.session() as db:
            offerings = models.list_offerings(db, rt.settings)
        offerings = access.visible(rt, principal(), offerings, chat_only=True)
        return {
            "object": "list",
            "data": [model_object(o) for o in offerings],
        }
