"""Sessions: create, list, read, rename/pin/archive, delete, transcript."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.sessions.schemas import (
    MessagesSchema,
    NewSessionSchema,
    SessionListArgsSchema,
    SessionPageSchema,
    SessionPatchSchema,
    SessionSchema,
)
from shared.memory import curation
from shared.sessions import service as sessions
from shared.storage.orm import SessionRow

blp = Blueprint("sessions", __name__, description="Chat sessions")


@blp.route("/sessions")
class Sessions(MethodView):
    @login_required
    @blp.arguments(SessionListArgsSchema, location="query")
    @blp.response(200, SessionPageSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        items, next_cursor = sessions.list_sessions(
            runtime(),
            principal(),
            limit=args["limit"],
            cursor=args["cursor"],
            query=args["q"],
            folder_id=args["folder_id"],
            archived=args["archived"],
        )
        return {"items": items, "next_cursor": next_cursor}

    @login_required
    @blp.arguments(NewSessionSchema, required=False)
    @blp.response(201, SessionSchema)
    def post(self, body: dict[str, Any]) -> SessionRow:
        return sessions.create_session(runtime(), principal(), **body)


@blp.route("/sessions/<session_id:session_id>")
class SessionById(MethodView):
    @login_required
    @blp.response(200, SessionSchema)
    def get(self, session_id: str) -> SessionRow:
        return sessions.get_session(runtime(), principal(), session_id)

    @login_required
    @blp.arguments(SessionPatchSchema)
    @blp.response(200, SessionSchema)
    def patch(self, body: dict[str, Any], session_id: str) -> SessionRow:
        return sessions.update_session(runtime(), principal(), session_id, body)

    @login_required
    @blp.response(204)
    def delete(self, session_id: str) -> None:
        sessions.delete_session(runtime(), principal(), session_id)


@blp.route("/sessions/<session_id:session_id>/messages")
class SessionMessages(MethodView):
    @login_required
    @blp.response(200, MessagesSchema)
    def get(self, session_id: str) -> dict[str, Any]:
        return {"items": curation.messages_with_likes(runtime(), principal(), session_id)}
