"""Remember this turn: POST/DELETE /sessions/<id>/messages/<mid>/like."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.schemas import Schema
from shared.memory import curation

blp = Blueprint("likes", __name__, description="Remember this turn")


class LikeSchema(Schema):
    pair_id = ma.fields.String(metadata={"description": "the id of the turn's user message"})
    message_ids = ma.fields.List(ma.fields.String())
    status = ma.fields.String(allow_none=True, metadata={"description": "saving, saved or failed"})
    detail = ma.fields.String(allow_none=True, metadata={"description": "why it failed"})
    changes = ma.fields.Integer(allow_none=True)


@blp.route("/sessions/<session_id:session_id>/messages/<message_id:message_id>/like")
class MessageLike(MethodView):
    @login_required
    @blp.response(202, LikeSchema, description="the turn is being remembered")
    @blp.alt_response(200, schema=LikeSchema, description="already liked: nothing new started")
    def post(self, session_id: str, message_id: str) -> tuple[curation.LikeStatus, int]:
        """Like a user message or a final answer: its turn is distilled into MEMORY.md."""
        like, started = curation.like_message(runtime(), principal(), session_id, message_id)
        return like, 202 if started else 200

    @login_required
    @blp.response(204)
    def delete(self, session_id: str, message_id: str) -> None:
        """Remove the like; what was remembered stays in MEMORY.md."""
        curation.unlike_message(runtime(), principal(), session_id, message_id)
