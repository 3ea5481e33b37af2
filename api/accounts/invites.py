"""Invites: an administrator makes a link; whoever opens it chooses a username and password.

The link is `<PUBLIC_URL or this request's own URL>/invite/<secret>`, a page of the web
client that posts to `POST /invites/<secret>/accept`, which makes the account and signs the
browser in with the same session cookie as `POST /auth/session`. The domain rules (one use,
expiry, throttling) are in shared/accounts/invites.py.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import marshmallow as ma
from flask import request
from flask.views import MethodView

from api.accounts.browser import SignInSchema, _set_cookie, _signed_in
from api.accounts.schemas import password_field, username
from api.context import admin_required, principal, runtime, session_cookie
from api.extensions import Blueprint
from api.schemas import Flag, Schema, StrictSchema
from shared.accounts import invites, people
from shared.db.orm import Invite

blp = Blueprint("invites", __name__, description="Invite links: people make their own accounts")


class NewInviteSchema(StrictSchema):
    is_admin = Flag(
        load_default=False,
        metadata={"description": "true: the account made with it is an administrator"},
    )


class IssuedInviteSchema(Schema):
    id = ma.fields.String()
    url = ma.fields.String(
        metadata={"description": "the link to give the person; shown once (only a hash is kept)"}
    )
    expires_at = ma.fields.AwareDateTime()


class InviteSchema(Schema):
    id = ma.fields.String()
    is_admin = ma.fields.Boolean()
    created_by = ma.fields.String(allow_none=True)
    created_at = ma.fields.AwareDateTime()
    expires_at = ma.fields.AwareDateTime()


class AcceptInviteSchema(StrictSchema):
    """The account's username and password (the invite says whether it administers)."""

    username = username()
    password = password_field(required=True)


@blp.route("/invites")
class Invites(MethodView):
    @admin_required
    @blp.response(200, InviteSchema(many=True))
    def get(self) -> list[Invite]:
        """The invites not used yet and not expired."""
        rt = runtime()
        with rt.db.session() as db:
            return invites.pending_invites(db, now=rt.clock.now())

    @admin_required
    @blp.arguments(NewInviteSchema)
    @blp.response(201, IssuedInviteSchema)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """A new invite link, usable once within INVITE_TTL_HOURS (7 days by default). The
        link is under PUBLIC_URL when it is set, else under the URL this request came to."""
        rt = runtime()
        ttl = timedelta(hours=rt.settings.invite_ttl_hours)
        with rt.db.session() as db:
            invite, secret = invites.create_invite(
                db, principal().user_id, is_admin=body["is_admin"], ttl=ttl, now=rt.clock.now()
            )
        base = getattr(rt.settings, "public_url", None) or request.url_root
        url = f"{base.rstrip('/')}/invite/{secret}"
        return {"id": invite.id, "url": url, "expires_at": invite.expires_at}


@blp.route("/invites/<token_id:invite_id>")
class InviteById(MethodView):
    @admin_required
    @blp.response(204)
    def delete(self, invite_id: str) -> None:
        """Revoke an invite not used yet: its link answers 404 from now on."""
        with runtime().db.session() as db:
            invites.revoke_invite(db, invite_id)


@blp.route("/invites/<invite_secret:secret>/accept")
class AcceptInvite(MethodView):
    @blp.arguments(AcceptInviteSchema)
    @blp.response(201, SignInSchema)
    @blp.doc(security=[])
    def post(self, body: dict[str, Any], secret: str) -> dict[str, Any]:
        """Make your account with an invite and be signed in (the session cookie, as
        `POST /auth/session`). A used invite is 410 `invite_used`, an expired one 410
        `invite_expired`; a taken username 409 `user_exists` (the invite stays usable). A
        secret that names no invite counts as a failed login of this address: past a few,
        429 with `Retry-After`."""
        rt = runtime()
        ttl = timedelta(hours=rt.settings.web_session_ttl_hours)
        address = request.remote_addr or "unknown"
        previous = _signed_in(session_cookie())
        with rt.db.session() as db:
            user, _row, token = invites.accept_invite(
                db,
                rt.throttle,
                address,
                secret,
                body["username"],
                body["password"],
                ttl=ttl,
                now=rt.clock.now(),
            )
            if previous is not None:
                people.revoke_token(db, previous, previous.token_id)
            me = {"id": user.id, "username": user.username, "is_admin": user.is_admin}
        if previous is not None:
            rt.auth_changed(previous.user_id)
        _set_cookie(token, ttl)
        return {"user": me, "csrf_token": people.csrf_token(token)}
