"""Browser sign-in: a session cookie instead of a bearer token.

`POST /auth/session` checks the password (throttled like `POST /auth/login`) and sets the
session cookie: HttpOnly (page scripts never see it), SameSite=Strict (other sites' requests
do not carry it), Path=/ and no Domain; over https it is Secure and named
`__Host-eonyx_session`, which no other origin of the host can set (api/context.py). The body
carries the CSRF token that state-changing requests send back in `X-CSRF-Token`; a reloaded
page gets it again from `GET /auth/session`. Behind the cookie is a revocable `browser` token
(see shared/accounts).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import marshmallow as ma
from flask import Response, after_this_request, request
from flask.views import MethodView

from api.accounts.schemas import LoginSchema
from api.context import check_csrf, runtime, session_cookie, session_cookie_name
from api.extensions import Blueprint
from api.schemas import Schema
from shared.accounts import people
from shared.accounts.people import Principal
from shared.core.errors import Unauthorized
from shared.db.orm import User

blp = Blueprint(
    "browser",
    __name__,
    description="Browser sign-in: the eonyx_session cookie and its CSRF token",
)


class SignedInUserSchema(Schema):
    id = ma.fields.String()
    username = ma.fields.String()
    is_admin = ma.fields.Boolean()


class SignInSchema(Schema):
    user = ma.fields.Nested(SignedInUserSchema)
    csrf_token = ma.fields.String(
        metadata={"description": "send it as X-CSRF-Token with every POST, PUT, PATCH, DELETE"}
    )
    must_change_password = ma.fields.Boolean(
        metadata={
            "description": "true: an administrator reset the password; this sign-in may only "
            "change it (PUT /me/password) or sign out until it is changed"
        }
    )


@blp.route("/auth/session")
class SignIn(MethodView):
    @blp.arguments(LoginSchema)
    @blp.response(200, SignInSchema)
    @blp.doc(security=[])
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Sign in and get the session cookie. Failed attempts are throttled as for
        `POST /auth/login`. A sign-in the browser already had is ended."""
        rt = runtime()
        ttl = timedelta(hours=rt.settings.web_session_ttl_hours)
        address = request.remote_addr or "unknown"
        previous = _signed_in(session_cookie())
        with rt.db.session() as db:
            row, token = people.attempt_login(
                db, rt.throttle, address, body["username"], body["password"], ttl, people.BROWSER
            )
            if previous is not None:
                people.revoke_token(db, previous, previous.token_id)
            user = db.get_one(User, row.user_id)
            me = {"id": row.user_id, "username": user.username, "is_admin": user.is_admin}
        if previous is not None:
            rt.auth_changed(previous.user_id)
        _set_cookie(token, ttl)
        return {
            "user": me,
            "csrf_token": people.csrf_token(token),
            "must_change_password": user.must_change_password,
        }

    @blp.response(200, SignInSchema)
    @blp.doc(security=[{"cookieAuth": []}])
    def get(self) -> dict[str, Any]:
        """The signed-in user and the CSRF token, while the cookie is valid (401 otherwise)."""
        token = session_cookie()
        found = _signed_in(token)
        if found is None:
            raise Unauthorized("not signed in, or the sign-in has ended", code="not_signed_in")
        me = {"id": found.user_id, "username": found.username, "is_admin": found.is_admin}
        return {
            "user": me,
            "csrf_token": people.csrf_token(token),
            "must_change_password": found.must_change_password,
        }

    @blp.response(204)
    @blp.doc(security=[{}, {"cookieAuth": []}])  # without a sign-in: nothing to end, still 204
    def delete(self) -> None:
        """Sign out: the sign-in is revoked on the server and the cookie cleared. Needs the
        X-CSRF-Token of a valid sign-in; without a valid one there is only a cookie to clear."""
        token = session_cookie()
        found = _signed_in(token)
        if found is not None:
            check_csrf(token)
            rt = runtime()
            with rt.db.session() as db:
                people.revoke_token(db, found, found.token_id)
            rt.auth_changed(found.user_id)
        _set_cookie("", None)


def _signed_in(token: str) -> Principal | None:
    """The principal behind a session cookie's value, None when it is not a valid sign-in."""
    if not token.strip():
        return None
    try:
        rt = runtime()
        return people.authenticate(
            rt.db, rt.tokens, token.strip(), now=rt.clock.now(), from_cookie=True
        )
    except Unauthorized:
        return None


def _set_cookie(token: str, ttl: timedelta | None) -> None:
    """Set the cookie on this request's response (`ttl` None: clear it)."""
    secure, name = request.is_secure, session_cookie_name()

    @after_this_request
    def cookie(response: Response) -> Response:
        if ttl is None:
            response.delete_cookie(name, path="/", secure=secure, httponly=True, samesite="Strict")
        else:
            response.set_cookie(
                name,
                token,
                max_age=int(ttl.total_seconds()),
                path="/",
                secure=secure,
                httponly=True,
                samesite="Strict",
            )
        return response
