"""Notes an outside agent leaves: POST /notes (what `eonyx mcp`'s `session_note` sends)."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import principal, runtime, scope_required
from api.extensions import Blueprint
from api.schemas import Line, Schema, StrictSchema, Text
from api.sessions.schemas import SessionSchema
from shared.core import registry
from shared.files.session_store import SESSION_ID_RE
from shared.integrations import notes

blp = Blueprint("notes", __name__, description="Notes from outside agents")
Length = ma.validate.Length


class NoteSchema(StrictSchema):
    note = Text(required=True, validate=Length(min=1, max=notes.NOTE_MAX))
    session_id = Line(
        load_default=None,
        pattern=SESSION_ID_RE.pattern,
        pattern_error="session ids look like 20260705T091500-1a2b3c4d",
        metadata={"description": "one of your sessions; left out, the session of `workdir`"},
    )
    workdir = Line(
        load_default=None,
        validate=Length(min=1, max=notes.WORKDIR_MAX),
        metadata={
            "description": "the agent's working directory: its notes go to one session of "
            "source `mcp` per directory, made on the first note"
        },
    )
    agent = Line(
        load_default=None,
        validate=Length(min=1, max=notes.AGENT_MAX),
        metadata={"description": "who leaves the note (`Claude Code`), shown before it"},
    )

    @ma.validates_schema
    def where(self, data: dict[str, Any], **_: Any) -> None:
        if not data.get("session_id") and not data.get("workdir"):
            raise ma.ValidationError("give a session_id or the agent's workdir", "session_id")


class NotedSchema(Schema):
    session = ma.fields.Nested(SessionSchema)
    message_id = ma.fields.String()
    created = ma.fields.Boolean(
        metadata={"description": "true: this note made the working directory's session"}
    )


@blp.route("/notes")
class Notes(MethodView):
    @scope_required(registry.SCOPE_MEMORY_WRITE)
    @blp.arguments(NoteSchema)
    @blp.response(201, NotedSchema)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Append a note to one of your sessions, or to the session of a working directory
        (source `mcp`). It is a user message named `mcp`, prefixed with who left it; a
        session answering a turn refuses it for a moment (409 `busy`)."""
        noted = notes.append_note(runtime(), principal(), **body)
        return {"session": noted.session, "message_id": noted.message_id, "created": noted.created}
