"""Chat turns (JSON or server-sent events) and the context gauge."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from flask import Response, stream_with_context
from flask.views import MethodView
from flask_smorest import Blueprint

from api.context import login_required, principal, runtime
from api.errors import render_error
from api.extensions import error_payload
from api.sessions.schemas import ContextViewSchema, MessageSchema, TurnResultSchema, TurnSchema
from shared.chat import turns
from shared.core.errors import EonyxError

log = logging.getLogger(__name__)
blp = Blueprint("turns", __name__, description="Chat turns and the context gauge")

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


@blp.route("/sessions/<session_id>/turns")
class Turns(MethodView):
    @login_required
    @blp.arguments(TurnSchema)
    @blp.response(200, TurnResultSchema)
    @blp.alt_response(200, description=STREAM_EVENTS, success=True)
    def post(self, body: dict[str, Any], session_id: str) -> Any:
        stream = body.pop("stream")
        request = turns.TurnRequest(**body)
        rt, who = runtime(), principal()
        if not stream:
            return turns.run_turn(rt, who, session_id, request)
        events = turns.iter_turn(rt, who, session_id, request, stream=True)
        first = next(events)  # errors before the model speaks are plain JSON errors
        return Response(
            stream_with_context(_sse(first, events)),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _sse(first: Any, rest: Iterator[Any]) -> Iterator[str]:
    """`token` events with text and the steps as they happen, then `done` with the whole
    turn, or `error` (see STREAM_EVENTS)."""
    item = first
    try:
        while True:
            if isinstance(item, turns.TurnResult):
                yield _event("done", TurnResultSchema().dump(item))
                return
            if isinstance(item, turns.StepEvent):
                data = MessageSchema().dump(item.data) if item.kind == "tool_result" else item.data
                yield _event(item.kind, data)
            else:
                yield _event("token", {"text": item.text})
            item = next(rest)
    except EonyxError as exc:
        body, status = render_error(exc)
        yield _event("error", {**body, "status": status})
    except Exception:  # the headers are sent: the stream itself must say what went wrong
        log.exception("a streamed turn failed")
        body = error_payload("internal_error", "the turn failed on the server")
        yield _event("error", {**body, "status": 500})


@blp.route("/sessions/<session_id>/context")
class Context(MethodView):
    @login_required
    @blp.response(200, ContextViewSchema)
    def get(self, session_id: str) -> dict[str, Any]:
        context = turns.describe_context(runtime(), principal(), session_id)
        return {
            **context.usage.to_dict(),
            "system_prompt": context.system_prompt,
            "summary": context.summary.to_dict() if context.summary else None,
            "message_count": len(context.messages),
        }
