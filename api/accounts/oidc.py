"""Single sign-on: the browser's round trip through the OpenID provider (OIDC_ISSUER).

`GET /auth/methods` tells the sign-in page which ways to sign in there are. `GET
/auth/oidc/login` sends the browser to the provider with a new state (shared.integrations.oidc)
and binds that state to this browser with a short-lived cookie, so that a callback another
site's page makes this browser open, with someone else's code, is refused (login CSRF).
`GET /auth/oidc/callback` finishes: the state is used up, the code exchanged, the ID token
validated, the account found or made, and the browser signed in with the same session cookie
as a password sign-in (api/accounts/browser.py), then sent to `/`. Any failure is a JSON
error (400 for a forged or replayed state) and sets no session cookie.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import marshmallow as ma
from flask import Response, after_this_request, current_app, redirect, request
from flask.views import MethodView
from werkzeug.wrappers import Response as WerkzeugResponse

from api.accounts.browser import _set_cookie, _signed_in
from api.context import runtime, session_cookie
from api.extensions import Blueprint
from api.schemas import Schema
from shared.accounts import people
from shared.core.errors import Forbidden, InvalidInput, NotFound
from shared.integrations import oidc

blp = Blueprint("oidc", __name__, description="Single sign-on with an OpenID Connect provider")

EXTENSION = "eonyx.oidc"  # the app's oidc.Provider, made at the first sign-in
STATE_COOKIE = "eonyx_oidc_state"
STATE_COOKIE_PATH = "/api/v1/auth/oidc"
# The password sign-ins PASSWORD_SIGN_IN=false turns off: a browser's and a login token's.
PASSWORD_ENDPOINTS = frozenset({"browser.SignIn", "accounts.Login"})


class ProviderSchema(Schema):
    name = ma.fields.String(metadata={"description": 'the button\'s label: "Sign in with NAME"'})
    login_url = ma.fields.String()


class MethodsSchema(Schema):
    password = ma.fields.Boolean(metadata={"description": "username and password sign-in"})
    oidc = ma.fields.Nested(ProviderSchema, allow_none=True)


class CallbackSchema(Schema):
    class Meta:
        unknown = ma.EXCLUDE  # providers add their own (iss, session_state, ...)

    state = ma.fields.String(load_default="")
    code = ma.fields.String(load_default="")
    error = ma.fields.String(load_default="")
    error_description = ma.fields.String(load_default="")


@blp.before_app_request
def refuse_passwords() -> None:
    """With PASSWORD_SIGN_IN=false, a password sign-in is refused before it is tried."""
    if request.method == "POST" and request.endpoint in PASSWORD_ENDPOINTS:
        settings = runtime().settings
        if not settings.password_sign_in:
            way = f" with {oidc.provider_name(settings)}" if oidc.configured(settings) else ""
            raise Forbidden(
                f"signing in with a password is turned off on this server; sign in{way} instead",
                code="password_sign_in_off",
            )


def _provider() -> oidc.Provider:
    rt = runtime()
    if not oidc.configured(rt.settings):
        raise NotFound("single sign-on is not set up on this server", code="oidc_not_configured")
    found = current_app.extensions.get(EXTENSION)
    if found is None:
        found = current_app.extensions[EXTENSION] = oidc.Provider(rt.settings, rt.redis)
    return found


@blp.route("/auth/methods")
class Methods(MethodView):
    @blp.response(200, MethodsSchema)
    @blp.doc(security=[])
    def get(self) -> dict[str, Any]:
        """How one signs in here: with a password, and with which single sign-on provider."""
        settings = runtime().settings
        provider = None
        if oidc.configured(settings):
            provider = {
                "name": oidc.provider_name(settings),
                "login_url": STATE_COOKIE_PATH + "/login",
            }
        return {"password": settings.password_sign_in, "oidc": provider}


@blp.route("/auth/oidc/login")
class Login(MethodView):
    @blp.response(302)
    @blp.doc(security=[])
    def get(self) -> WerkzeugResponse:
        """Go to the sign-in provider (302); it comes back to `/auth/oidc/callback`. 404
        when single sign-on is not set up."""
        state, url = _provider().start()
        secure = request.is_secure

        @after_this_request
        def cookie(response: Response) -> Response:
            response.set_cookie(
                STATE_COOKIE,
                state,
                max_age=oidc.STATE_TTL,
                path=STATE_COOKIE_PATH,
                secure=secure,
                httponly=True,
                samesite="Lax",  # the provider's redirect back is a cross-site navigation
            )
            return response

        return redirect(url, 302)


@blp.route("/auth/oidc/callback")
class Callback(MethodView):
    @blp.arguments(CallbackSchema, location="query")
    @blp.response(302)
    @blp.doc(security=[])
    def get(self, query: dict[str, str]) -> WerkzeugResponse:
        """Where the provider sends the browser back: the browser is signed in (the session
        cookie, as `POST /auth/session` sets it) and sent to `/` (302). A state this browser
        was not given, or one used already, is 400; an ID token that is not valid here
        (another audience, expired, ...) 401; a disabled account 403."""
        provider = _provider()
        state = query["state"]
        bound = request.cookies.get(STATE_COOKIE, "")
        _clear_state_cookie()
        if query["error"]:
            provider.states.take(state)
            raise InvalidInput(
                f"the sign-in provider answered {query['error']}: {query['error_description']}",
                code="oidc_provider_error",
            )
        if not state or state != bound:
            raise InvalidInput(
                "this sign-in's state was not started by this browser; start the sign-in again",
                code="oidc_bad_state",
            )
        claims = provider.finish(state, query["code"])
        rt = runtime()
        ttl = timedelta(hours=rt.settings.web_session_ttl_hours)
        previous = _signed_in(session_cookie())
        with rt.db.session() as db:
            done = oidc.sign_in(db, rt.settings, claims, ttl)
            if previous is not None:
                people.revoke_token(db, previous, previous.token_id)
        if previous is not None:
            rt.auth_changed(previous.user_id)
        if done.admin_changed:
            rt.auth_changed(done.user_id)
        _set_cookie(done.token, ttl)
        return redirect("/", 302)


def _clear_state_cookie() -> None:
    secure = request.is_secure

    @after_this_request
    def cookie(response: Response) -> Response:
        response.delete_cookie(
            STATE_COOKIE, path=STATE_COOKIE_PATH, secure=secure, httponly=True, samesite="Lax"
        )
        return response
