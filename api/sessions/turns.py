"""Chat turns (JSON or server-sent events) and the context gauge."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import marshmallow as ma
from flask import Response, g, request, stream_with_context
from flask.views import MethodView

from api.context import body_limit, login_required, principal, runtime
from api.errors import render_error
from api.extensions import Blueprint, error_payload, validation_message
from api.ratelimit import counts_as_turn
from api.sessions.schemas import ContextViewSchema, MessageSchema, TurnResultSchema, TurnSchema
from shared.chat import turns
from shared.chat.context import describe_context
from shared.core import sse
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import EonyxError, InvalidInput
from shared.core.settings import Settings
from shared.sessions import title_job

log = logging.getLogger(__name__)
# One server-sent event of a streamed turn; `data` is JSON (see STREAM_EVENTS).
SSE_EVENT = {
    "type": "object",
    "properties": {
        "event": {
            "type": "string",
            "enum": ["token", "tool_call", "tool_result", "memory_write", "done", "error"],
        },
        "data": {"type": "string", "description": "JSON"},
    },
    "required": ["event", "data"],
}
blp = Blueprint("turns", __name__, description="Chat turns and the context gauge")
RESULT = TurnResultSchema()  # built once: building one costs ten times a dump

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

Errors found before the model is called are plain JSON errors with their HTTP status."""


def turn_body_limit(settings: Settings) -> int:
    """A turn's body: the text, and the images it may carry (base64 in JSON: 4/3 larger)."""
    images = settings.max_images_per_message * (settings.max_image_bytes * 4 // 3 + 1024)
    return settings.max_request_bytes + images


@blp.route("/sessions/<session_id:session_id>/turns")
class Turns(MethodView):
    @counts_as_turn
    @login_required
    @body_limit(turn_body_limit)
    @blp.arguments(TurnSchema, multipart=True)
    @blp.response(200, TurnResultSchema, description=STREAM_EVENTS)
    @blp.alt_response(
        200,
        schema=SSE_EVENT,
        content_type="text/event-stream",
        description=STREAM_EVENTS,
        success=True,
    )
    def post(self, body: dict[str, Any], session_id: str) -> Any:
        """A chat turn. JSON, or multipart/form-data with the same fields (project_context
        as JSON text) and image files in `images`."""
        if request.mimetype == "multipart/form-data":
            body = _multipart_turn()
        stream = body.pop("stream")
        turn_request = turns.TurnRequest(**body)
        rt, who = runtime(), principal()
        if not stream:
            return turns.run_turn(rt, who, session_id, turn_request)
        events = turns.iter_turn(rt, who, session_id, turn_request, stream=True)
        first = next(events)  # errors before the model speaks are plain JSON errors
        return Response(
            stream_with_context(_sse(first, events)),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


REFUSED_AS_SENT = (400, 413, 422)  # the message can never be taken as it is (not 409, 429)


@blp.after_request
def _end_the_title_of_a_refused_first_message(response: Response) -> Response:
    """A session whose first message was refused has no title coming: its pending state
    ends (and is pushed), so no client shows a spinner for it, even after a reload. The
    session stays for the client to send a message it can take (or to delete)."""
    session_id = (request.view_args or {}).get("session_id")
    who = g.get("principal")
    if request.method == "POST" and response.status_code in REFUSED_AS_SENT and session_id and who:
        title_job.finish(runtime(), who.user_id, session_id, None, unused_only=True)
    return response


def _multipart_turn() -> dict[str, Any]:
    """A turn sent as a form: its fields through the same schema, its files as images."""
    fields: dict[str, Any] = {k: v for k, v in request.form.items() if k != "project_context"}
    for flag in ("stream", "retry"):
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
        body = TurnSchema().load(fields)
    except ma.ValidationError as exc:
        raise InvalidInput(validation_message(exc.messages), code="invalid_request") from None
    cap = runtime().settings.max_image_bytes + 1  # one byte more tells "too large"
    uploads = request.files.getlist("images")
    body["images"] = tuple(upload.stream.read(cap) for upload in uploads)
    unknown = set(request.files) - {"images"}
    if unknown:
        raise InvalidInput(f"unknown file field: {sorted(unknown)[0]} (send images)")
    return body


def _sse(first: Any, rest: Iterator[Any]) -> Iterator[str]:
    """`token` events with text and the steps as they happen, then `done` with the whole
    turn, or `error` (see STREAM_EVENTS)."""
    item = first
    try:
        while True:
            if isinstance(item, turns.TurnResult):
                yield sse.encode(RESULT.dump(item), "done")
                return
            if isinstance(item, turns.StepEvent):
                data = MessageSchema().dump(item.data) if item.kind == "tool_result" else item.data
                yield sse.encode(data, item.kind)
            else:
                yield sse.encode({"text": item.text}, "token")
            item = next(rest)
    except EonyxError as exc:
        body, status = render_error(exc)
        yield sse.encode({**body, "status": status}, "error")
    except Exception:  # the headers are sent: the stream itself must say what went wrong
        log.exception("a streamed turn failed")
        body = error_payload("internal_error", "the turn failed on the server")
        yield sse.encode({**body, "status": 500}, "error")


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
