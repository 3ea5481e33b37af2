"""The OpenAI-compatible facade: `POST /v1/chat/completions` and `GET /v1/models`.

Existing OpenAI client libraries work unchanged with an Eonyx API key as their key and Eonyx's
URL + `/v1` as their base URL. Every response names its session in `X-Eonyx-Session`; errors
come in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Response, request, stream_with_context
from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.facade import SESSION_HEADER, TEMPORARY_HEADER
from api.facade.completions import completion_body, completion_chunks
from api.facade.errors import OPENAI_ERRORS, handle_errors_of, openai_error
from api.facade.models import model_object
from api.facade.responses import finished, response_events, skeleton
from api.facade.schemas import CompletionRequestSchema, ResponsesRequestSchema
from api.ratelimit import counts_as_turn
from shared.accounts.people import Principal
from shared.chat import turns
from shared.integrations import facade, responses
from shared.integrations.openai_request import ChatRequest, read_chat_request
from shared.llm import access, models

if TYPE_CHECKING:
    from shared.runtime import Runtime

log = logging.getLogger(__name__)
blp = Blueprint("openai", __name__, url_prefix="/v1", description="OpenAI-compatible facade")
handle_errors_of(blp)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class _Started:
    """A facade turn under way: where it goes and, plain, its result or, streamed, its
    first event (errors before the model speaks are plain JSON errors) and the rest."""

    where: facade.Continuation
    planned: facade.PlannedTurn
    result: turns.TurnResult | None = None
    first: Any = None
    rest: Iterator[Any] = iter(())


def _start(rt: Runtime, who: Principal, chat: ChatRequest, session: str | None) -> _Started:
    """Choose the session, plan the turn and run it (a streamed one up to its first event);
    a session made for a request that is then refused goes again. The caller binds the
    session's new head once the answer is saved."""
    temporary = chat.temporary or _flag(request.headers.get(TEMPORARY_HEADER))
    where = facade.choose_session(rt, who, chat, session, temporary=temporary)
    try:
        planned = facade.plan_turn(chat, where)
        if not chat.stream:
            result = turns.run_turn(rt, who, where.session_id, planned.request)
            return _Started(where, planned, result)
        events = turns.iter_turn(rt, who, where.session_id, planned.request, stream=True)
        return _Started(where, planned, first=next(events), rest=events)
    except BaseException:
        facade.forget_unused(rt, who, where)
        raise


def _stream(rt: Runtime, who: Principal, started: _Started, events: Iterator[str]) -> Response:
    """The answer as a stream. When it ends, failed or left by the client, a session made for
    it goes again unless the answer was saved, as a refused request's does (`_start`)."""

    def guarded() -> Iterator[str]:
        try:
            yield from events
        finally:
            facade.forget_unused(rt, who, started.where)

    session_id = started.where.session_id
    headers = {SESSION_HEADER: session_id, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(guarded()), mimetype="text/event-stream", headers=headers)


@blp.route("/chat/completions")
class ChatCompletions(MethodView):
    @counts_as_turn
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.arguments(CompletionRequestSchema)
    @blp.response(200)
    @blp.alt_response(200, description="with stream: true, text/event-stream", success=True)
    def post(self, body: dict[str, Any]) -> Any:
        rt, who = runtime(), facade.caller(principal())
        chat = read_chat_request(body)
        started = _start(rt, who, chat, request.headers.get(SESSION_HEADER))
        session_id = started.where.session_id
        if started.result is not None:
            facade.remember(rt, who, started.planned)
            return completion_body(chat.model, started.result), 200, {SESSION_HEADER: session_id}
        chunks = completion_chunks(
            chat.model,
            started.first,
            started.rest,
            include_usage=chat.include_usage,
            done=lambda _result: facade.remember(rt, who, started.planned),
            error_body=openai_error,
        )
        return _stream(rt, who, started, chunks)


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
        chat, previous = responses.read_responses_request(body)
        session = (
            responses.session_of(rt, who, previous)
            if previous
            else request.headers.get(SESSION_HEADER)
        )
        response = skeleton(responses.new_response_id(), body, chat.model)
        started = _start(rt, who, chat, session)
        session_id = started.where.session_id

        def done(result: turns.TurnResult, message_id: str | None = None) -> dict[str, Any]:
            answer = finished(response, result, message_id)
            responses.keep(rt, who, started.planned, answer)  # and binds the new head
            return answer

        if started.result is not None:
            return done(started.result), 200, {SESSION_HEADER: session_id}

        events = response_events(response, started.first, started.rest, done=done)
        return _stream(rt, who, started, events)


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
