"""Chat turns (JSON or server-sent events) and the context gauge."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import marshmallow as ma
from flask import request, url_for
from flask.views import MethodView

from api.context import body_limit, login_required, principal, runtime
from api.extensions import Blueprint, validation_message
from api.ratelimit import counts_as_turn
from api.sessions.schemas import (
    ContextViewSchema,
    FirstTurnSchema,
    MessageSchema,
    TurnResultSchema,
    TurnSchema,
)
from api.streaming import event_stream
from shared.chat import turns
from shared.chat.context import describe_context
from shared.core import events, sse
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import EonyxError, InvalidInput
from shared.core.settings import Settings

# One server-sent event of a streamed turn; `data` is JSON (see STREAM_EVENTS).
SSE_EVENT = {
    "type": "object",
    "properties": {
        "event": {
            "type": "string",
            "enum": [
                "session",
                "token",
                "tool_call",
                "tool_result",
                "memory_write",
                "done",
                "error",
            ],
        },
        "data": {"type": "string", "description": "JSON"},
    },
    "required": ["event", "data"],
}
blp = Blueprint("turns", __name__, description="Chat turns and the context gauge")
RESULT = TurnResultSchema()  # built once: building one costs ten times a dump
MESSAGE = MessageSchema()

STREAM_EVENTS = """With `stream: true`: `text/event-stream`, one JSON object per event's `data`.

- `token` `{text}`: the next piece of the answer's text.
- `tool_call` `{message_id, id, type, function: {name, arguments}}`: the model called a tool
  (`message_id` is the assistant message that carries the call).
- `tool_result` `{id, role: "tool", tool_call_id, name, content, created_at}`: the tool's
  answer, as the message saved in the transcript.
- `memory_write` `{type: "memory.updated", file, action, ...}`: a memory file was changed
  (USER.md or MEMORY.md; the same object as in the response's `memory_writes`).
- `done`: the whole turn, as the JSON response without streaming.
- `error` `{error: {code, message}, status}`: the turn failed after the stream began; what
  was saved stays saved (a model failure, status 502, can be answered again with `retry`).

Errors found before the model answers are plain JSON errors with their HTTP status."""
FIRST_TURN = f"""201: the turn's JSON, with `session_id`, and `Location` naming the session.

{STREAM_EVENTS}

Streamed, the first event is `session` `{{session_id}}`: the message was accepted and the
session made. A refused message is a plain JSON error and leaves no session. A model that
fails after the session was made leaves it with the message saved: the error's
`details.session_id` names it, for a `retry` there."""


def turn_body_limit(settings: Settings) -> int:
    """A turn's body: the text, and the images it may carry (base64 in JSON: 4/3 larger)."""
    images = settings.max_images_per_message * (settings.max_image_bytes * 4 // 3 + 1024)
    return settings.max_request_bytes + images


def _streamed_turn_doc(view: Any) -> Any:
    """The stream's answer in the API docs, beside the JSON one (with `stream: true`)."""
    return blp.alt_response(
        200,
        schema=SSE_EVENT,
        content_type="text/event-stream",
        description=STREAM_EVENTS,
        success=True,
    )(view)


@blp.route("/sessions/<session_id:session_id>/turns")
class Turns(MethodView):
    @counts_as_turn
    @login_required
    @body_limit(turn_body_limit)
    @blp.arguments(TurnSchema, multipart=True)
    @blp.response(200, TurnResultSchema, description=STREAM_EVENTS)
    @_streamed_turn_doc
    def post(self, body: dict[str, Any], session_id: str) -> Any:
        """A chat turn. JSON, or multipart/form-data with the same fields (project_context
        as JSON text) and image files in `images`."""
        body = _multipart_turn(TurnSchema) if request.mimetype == "multipart/form-data" else body
        stream = body.pop("stream")
        rt, who, turn_request = runtime(), principal(), turns.TurnRequest(**body)
        if not stream:
            return turns.run_turn(rt, who, session_id, turn_request)
        started = turns.start_streamed(rt, who, session_id, turn_request)
        return event_stream(_sse(started.events), _error_event)


@blp.route("/sessions/turns")
class FirstTurns(MethodView):
    @counts_as_turn
    @login_required
    @body_limit(turn_body_limit)
    @blp.arguments(FirstTurnSchema, multipart=True)
    @blp.response(201, TurnResultSchema, description=FIRST_TURN)
    @_streamed_turn_doc
    def post(self, body: dict[str, Any]) -> Any:
        """A new session's first turn: the session is made once its message is accepted
        (a refused one leaves nothing). The same body as a turn, and a new session's
        fields; the answer names the session (`session_id`, or a first `session` event)."""
        if request.mimetype == "multipart/form-data":
            body = _multipart_turn(FirstTurnSchema)
        stream = body.pop("stream")
        new = turns.NewSession(**{k: body.pop(k) for k in NEW_SESSION_FIELDS})
        rt, who, turn_request = runtime(), principal(), turns.TurnRequest(**body)
        if not stream:
            result = turns.run_turn(rt, who, new, turn_request)
            return result, 201, {"Location": _location(result.session_id)}
        started = turns.start_streamed(rt, who, new, turn_request)
        made = _encoded(events.SessionStarted(started.session_id))
        stream = itertools.chain([made], _sse(started.events))
        return event_stream(stream, _error_event, {"Location": _location(started.session_id)})


NEW_SESSION_FIELDS = ("title", "folder_id", "temporary", "source")


def _location(session_id: str) -> str:
    return url_for("sessions.SessionById", session_id=session_id)


def _multipart_turn(schema: type[ma.Schema]) -> dict[str, Any]:
    """A turn sent as a form: its fields through the same schema, its files as images."""
    fields: dict[str, Any] = {k: v for k, v in request.form.items() if k != "project_context"}
    for flag in ("stream", "retry", "regenerate", "temporary"):
        if flag in fields:
            fields[flag] = fields[flag].strip().lower() in ("1", "true", "yes", "on")
    if "project_context" in request.form:
        try:
            fields["project_context"] = decode_json(
                request.form["project_context"], what="project_context"
            )
        except InvalidJSON as exc:
            raise InvalidInput(exc.message, code="invalid_request") from None
    try:
        body: dict[str, Any] = schema().load(fields)
    except ma.ValidationError as exc:
        raise InvalidInput(validation_message(exc.messages), code="invalid_request") from None
    cap = runtime().settings.max_image_bytes + 1  # one byte more tells "too large"
    uploads = request.files.getlist("images")
    body["images"] = tuple(upload.stream.read(cap) for upload in uploads)
    unknown = set(request.files) - {"images"}
    if unknown:
        raise InvalidInput(f"unknown file field: {sorted(unknown)[0]} (send images)")
    return body


def _sse(items: Iterator[turns.TurnEvent]) -> Iterator[str]:
    """`token` events with text and the steps as they happen, then `done` with the whole
    turn (see STREAM_EVENTS; a failure ends it with `_error_event`)."""
    for item in items:
        event: events.StreamEvent
        if isinstance(item, turns.TurnResult):
            event = events.Done(RESULT.dump(item))
        elif isinstance(item, turns.TextDelta):
            event = events.Token(item.text)
        elif isinstance(item, events.ToolResult):
            event = events.ToolResult(MESSAGE.dump(item.message))
        else:
            event = item
        yield _encoded(event)


def _encoded(event: events.StreamEvent) -> str:
    return sse.encode(event.as_json(), event.NAME)


def _error_event(status: int, body: dict[str, Any], exc: EonyxError | None) -> str:
    error = body["error"]
    said = events.ErrorBody(error["code"], error["message"], error.get("details"))
    return _encoded(events.TurnError(said, status))


@blp.route("/sessions/<session_id:session_id>/context")
class Context(MethodView):
    @login_required
    @blp.response(200, ContextViewSchema)
    def get(self, session_id: str) -> dict[str, Any]:
        context = describe_context(runtime(), principal(), session_id)
        return {
            **context.usage.to_dict(),
            "system_prompt": context.system_prompt,
            "summary": context.summary.to_dict() if context.summary else None,
            "message_count": context.message_count,
        }
