"""Read-only links: the owner's POST/GET/DELETE /sessions/<id>/share, and a signed-in
reader's GET /shared/<token> and POST /shared/<token>/fork (shared.sessions.shares)."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask import request
from flask.views import MethodView

from api.context import login_required, principal, runtime, scope_required
from api.extensions import Blueprint
from api.schemas import Schema
from api.sessions.schemas import SessionSchema
from shared.core import registry
from shared.db.orm import SessionRow, SessionShare
from shared.sessions import shares

blp = Blueprint("shares", __name__, description="Read-only links to a session")


class ShareSchema(Schema):
    url = ma.fields.String(metadata={"description": "the page a teammate opens: /shared/<token>"})
    token = ma.fields.String(metadata={"description": "the link's secret, its last segment"})
    created_at = ma.fields.AwareDateTime(metadata={"description": "when the snapshot was taken"})


class SharedMessageSchema(Schema):
    role = ma.fields.String(metadata={"description": "user or assistant"})
    content = ma.fields.String()
    created_at = ma.fields.String(allow_none=True)


class SharedSchema(Schema):
    title = ma.fields.String(allow_none=True)
    shared_at = ma.fields.AwareDateTime()
    owner = ma.fields.String(metadata={"description": "the username of who shared it"})
    messages = ma.fields.List(ma.fields.Nested(SharedMessageSchema))


def _link(share: SessionShare) -> dict[str, Any]:
    """The share with its page's URL: under PUBLIC_URL when set, else this request's."""
    base = runtime().settings.public_url or request.url_root
    return {
        "url": f"{base.rstrip('/')}/shared/{share.token}",
        "token": share.token,
        "created_at": share.created_at,
    }


@blp.route("/sessions/<session_id:session_id>/share")
class SessionShareView(MethodView):
    @login_required
    @blp.response(201, ShareSchema, description="a new link to a snapshot of the session")
    @blp.alt_response(200, schema=ShareSchema, description="the session's link, already made")
    def post(self, session_id: str) -> tuple[dict[str, Any], int]:
        """A link to the conversation as it stands; sharing again answers the same link (revoke
        and share again for a fresh snapshot). A temporary chat cannot be shared (400)."""
        share, made = shares.share_session(runtime(), principal(), session_id)
        return _link(share), 201 if made else 200

    @scope_required(registry.SCOPE_SESSIONS_READ)
    @blp.response(200, ShareSchema)
    def get(self, session_id: str) -> dict[str, Any]:
        """The session's link, or 404 when it has none."""
        return _link(shares.get_share(runtime(), principal(), session_id))

    @login_required
    @blp.response(204)
    def delete(self, session_id: str) -> None:
        """Revoke: the link answers 404 from now on."""
        shares.revoke_share(runtime(), principal(), session_id)


@blp.route("/shared/<share_token:token>")
class SharedView(MethodView):
    @scope_required(registry.SCOPE_SESSIONS_READ)
    @blp.response(200, SharedSchema)
    def get(self, token: str) -> shares.Shared:
        """The snapshot, for any signed-in user of this server (a revoked link: 404)."""
        return shares.read_shared(runtime(), token)


@blp.route("/shared/<share_token:token>/fork")
class SharedFork(MethodView):
    @login_required
    @blp.response(201, SessionSchema)
    def post(self, token: str) -> SessionRow:
        """A copy of the snapshot in the caller's own sessions, without the owner's memory."""
        rt = runtime()
        return shares.fork_shared(rt, principal(), rt.memory, token)
