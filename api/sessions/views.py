"""Sessions: create, list and search, read, rename/pin/archive, fork, clear, the trash,
transcript."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api.context import login_required, principal, runtime, scope_required
from api.extensions import Blueprint
from api.sessions.schemas import (
    DeleteArgsSchema,
    ForkSchema,
    MessagesSchema,
    NewSessionSchema,
    SessionListArgsSchema,
    SessionPageSchema,
    SessionPatchSchema,
    SessionSchema,
)
from shared.core import registry
from shared.db.orm import SessionRow
from shared.index.listing import Filters, Found
from shared.sessions import lifecycle, transcript
from shared.sessions import service as sessions

blp = Blueprint("sessions", __name__, description="Chat sessions")


class SearchItem:
    """A search result as the item schema reads it: the row's fields and the hit's."""

    def __init__(self, found: Found) -> None:
        self._row = found.row
        self.snippet = found.hit.snippet
        self.match = found.hit.match
        self.score = round(found.hit.score, 4)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._row, name)


@blp.route("/sessions")
class Sessions(MethodView):
    @scope_required(registry.SCOPE_SESSIONS_READ)
    @blp.arguments(SessionListArgsSchema, location="query")
    @blp.response(200, SessionPageSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Pinned first, then most recently updated; with `q`, search results, best first."""
        filters = Filters(args["folder_id"], args["archived"], args["trash"], args["source"])
        page = {"limit": args["limit"], "cursor": args["cursor"], "filters": filters}
        if args["q"] is not None:
            found, next_cursor = sessions.search_sessions(runtime(), principal(), args["q"], **page)
            return {"items": [SearchItem(f) for f in found], "next_cursor": next_cursor}
        items, next_cursor = sessions.list_sessions(runtime(), principal(), **page)
        return {"items": items, "next_cursor": next_cursor}

    @login_required
    @blp.arguments(NewSessionSchema, required=False)
    @blp.response(201, SessionSchema)
    def post(self, body: dict[str, Any]) -> SessionRow:
        rt = runtime()
        return sessions.create_session(rt, principal(), rt.memory, **body)


@blp.route("/sessions/<session_id:session_id>")
class SessionById(MethodView):
    @scope_required(registry.SCOPE_SESSIONS_READ)
    @blp.response(200, SessionSchema)
    def get(self, session_id: str) -> SessionRow:
        return sessions.get_session(runtime(), principal(), session_id)

    @login_required
    @blp.arguments(SessionPatchSchema)
    @blp.response(200, SessionSchema)
    def patch(self, body: sessions.SessionPatch, session_id: str) -> SessionRow:
        """A title given here is final: no title job or mode changes it afterwards."""
        return sessions.update_session(runtime(), principal(), session_id, body)

    @login_required
    @blp.arguments(DeleteArgsSchema, location="query")
    @blp.response(204)
    def delete(self, args: dict[str, Any], session_id: str) -> None:
        """To the trash for 30 days; with `purge=true`, removed at once."""
        lifecycle.delete_session(runtime(), principal(), session_id, purge=args["purge"])


@blp.route("/sessions/<session_id:session_id>/fork")
class Fork(MethodView):
    @login_required
    @blp.arguments(ForkSchema, required=False)
    @blp.response(201, SessionSchema)
    def post(self, body: dict[str, Any], session_id: str) -> SessionRow:
        """A new session with a copy of the messages (up to `message_id`) and images."""
        return lifecycle.fork_session(runtime(), principal(), session_id, **body)


@blp.route("/sessions/<session_id:session_id>/clear")
class Clear(MethodView):
    @login_required
    @blp.response(200, SessionSchema)
    def post(self, session_id: str) -> SessionRow:
        """Wipe the history; the id, title, pin, archive and folder stay."""
        return lifecycle.clear_session(runtime(), principal(), session_id)


@blp.route("/sessions/<session_id:session_id>/restore")
class Restore(MethodView):
    @login_required
    @blp.response(200, SessionSchema)
    def post(self, session_id: str) -> SessionRow:
        """Out of the trash."""
        return lifecycle.restore_session(runtime(), principal(), session_id)


@blp.route("/sessions/<session_id:session_id>/messages")
class SessionMessages(MethodView):
    @scope_required(registry.SCOPE_SESSIONS_READ)
    @blp.response(200, MessagesSchema)
    def get(self, session_id: str) -> dict[str, Any]:
        return {"items": transcript.messages_with_likes(runtime(), principal(), session_id)}
