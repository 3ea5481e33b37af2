"""Login, API keys and users."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import request
from flask.views import MethodView

from api.accounts.schemas import (
    IssuedTokenSchema,
    LoginResultSchema,
    LoginSchema,
    NewTokenSchema,
    NewUserSchema,
    TokenSchema,
    UserSchema,
)
from api.context import admin_required, login_required, principal, runtime
from api.extensions import Blueprint
from shared import accounts
from shared.storage.orm import User

blp = Blueprint("accounts", __name__, description="Accounts, login and API keys")


@blp.route("/auth/login")
class Login(MethodView):
    @blp.arguments(LoginSchema)
    @blp.response(200, LoginResultSchema)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """A login token for a person. Failed attempts are throttled per account and per client
        address: past a few, the answer is 429 with `Retry-After` until the wait is over."""
        rt = runtime()
        ttl = timedelta(hours=rt.settings.login_token_ttl_hours)
        address = request.remote_addr or "unknown"
        with rt.db.session() as db:
            row, token = accounts.attempt_login(
                db, rt.throttle, address, body["username"], body["password"], ttl
            )
            user = db.get(User, row.user_id)
        return {"token": token, "expires_at": row.expires_at, "user": user}


@blp.route("/auth/logout")
class Logout(MethodView):
    @login_required
    @blp.response(204)
    def post(self) -> None:
        with runtime().db.session() as db:
            accounts.revoke_token(db, principal(), principal().token_id)


@blp.route("/tokens")
class Tokens(MethodView):
    @login_required
    @blp.response(200, TokenSchema(many=True))
    def get(self) -> list[Any]:
        with runtime().db.session() as db:
            return accounts.list_tokens(db, principal())

    @login_required
    @blp.arguments(NewTokenSchema)
    @blp.response(201, IssuedTokenSchema)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        with runtime().db.session() as db:
            row, token = accounts.create_api_key(db, principal(), body["name"])
        return {**{k: getattr(row, k) for k in TokenSchema().fields}, "token": token}


@blp.route("/tokens/<token_id:token_id>")
class TokenById(MethodView):
    @login_required
    @blp.response(204)
    def delete(self, token_id: str) -> None:
        with runtime().db.session() as db:
            accounts.revoke_token(db, principal(), token_id)


@blp.route("/users")
class Users(MethodView):
    @admin_required
    @blp.response(200, UserSchema(many=True))
    def get(self) -> list[User]:
        with runtime().db.session() as db:
            return accounts.list_users(db)

    @admin_required
    @blp.arguments(NewUserSchema)
    @blp.response(201, UserSchema)
    def post(self, body: dict[str, Any]) -> User:
        with runtime().db.session() as db:
            return accounts.create_user(
                db, body["username"], body["password"], is_admin=body["is_admin"]
            )


@blp.route("/users/me")
class Me(MethodView):
    @login_required
    @blp.response(200, UserSchema)
    def get(self) -> User | None:
        me = principal()
        with runtime().db.session() as db:
            return db.get(User, me.user_id)
