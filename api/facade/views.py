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

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.facade import SESSION_HEADER, TEMPORARY_HEADER
from api.facade.completions import completion_body, completion_chunks
from api.facade.errors import OPENAI_ERRORS, handle_errors_of, openai_error
from api.facade.models import model_object
from api.facade.schemas import CompletionRequestSchema
from shared.chat import turns
from shared.integrations import facade
from shared.integrations.openai_request import read_chat_request
from shared.llm import catalog

log = logging.getLogger(__name__)
blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
handle_errors_of(blp)


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
            "data": [model_object(o) for o in offerings],
        }
