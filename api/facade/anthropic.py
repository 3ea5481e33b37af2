"""Anthropic's Messages API on the facade: `POST /v1/messages` and
`POST /v1/messages/count_tokens`, so that Anthropic clients (the `anthropic` SDK; Claude Code
with ANTHROPIC_BASE_URL set to Eonyx's URL) keep their conversations and memory in Eonyx.

The key comes as `x-api-key` or `Authorization: Bearer` (api/context.py reads both); the
`anthropic-version` and `anthropic-beta` headers are accepted and need nothing of Eonyx.
The request runs as a Chat Completions one does (shared/integrations/anthropic_messages.py);
the answer names its session in `X-Eonyx-Session` and what was ignored in `X-Eonyx-Ignored`;
errors come in Anthropic's shape (api/facade/anthropic_errors.py).
"""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.facade import PREFIX, SESSION_HEADER, answer_headers, asks_temporary
from api.facade.anthropic_errors import handle_errors_of
from api.facade.anthropic_stream import error_event, message_events
from api.facade.schemas import AnthropicErrorSchema, CountTokensRequestSchema, MessagesRequestSchema
from api.ratelimit import counts_as_turn
from api.streaming import event_stream
from shared.integrations import anthropic_messages, facade

blp = Blueprint(
    "anthropic", __name__, url_prefix=PREFIX, description="Anthropic-compatible Messages API"
)
handle_errors_of(blp)
ANTHROPIC_ERRORS = {
    "default": {
        "description": "An error, in Anthropic's shape",
        "content": {"application/json": {"schema": AnthropicErrorSchema}},
    }
}


@blp.route("/messages")
class Messages(MethodView):
    @counts_as_turn
    @login_required
    @blp.doc(responses=ANTHROPIC_ERRORS)
    @blp.arguments(MessagesRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        """A turn in Anthropic's Messages form: the answer as a `message`, or with
        `stream: true` as Anthropic's events; its session in `X-Eonyx-Session`."""
        rt, who = runtime(), facade.caller(principal())
        chat = anthropic_messages.read_messages_request(body)
        header = request.headers.get(SESSION_HEADER)
        run = facade.run_chat(rt, who, chat, header, temporary=asks_temporary())
        where = answer_headers(run.session_id, chat.ignored)
        if run.result is not None:
            return anthropic_messages.message_body(chat.model, run.result), 200, where
        tokens = anthropic_messages.estimate_tokens(chat)
        return event_stream(message_events(chat.model, tokens, run.events), error_event, where)


@blp.route("/messages/count_tokens")
class CountTokens(MethodView):
    @login_required
    @blp.doc(responses=ANTHROPIC_ERRORS)
    @blp.arguments(CountTokensRequestSchema)
    @blp.response(200)
    def post(self, body: dict[str, Any]) -> dict[str, int]:
        """Eonyx's estimate of a Messages request's input tokens; no model is called."""
        return anthropic_messages.count_tokens(body)
