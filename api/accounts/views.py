"""Login, API keys and users.

Every change to who may act as a user (a token revoked, a password changed, an account
disabled or deleted) is announced after its commit (`Runtime.auth_changed`), so that
the user's open event sockets check their tokens again at once.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import request
from flask.views import MethodView

from api.accounts.schemas import (
    CurrentTokenSchema,
    IssuedTokenSchema,
    LoginResultSchema,
    LoginSchema,
    NewTokenSchema,
    NewUserSchema,
    PasswordChangedSchema,
    PasswordChangeSchema,
    TokenSchema,
    UserChangeSchema,
    UserListedSchema,
    UserSchema,
)
from api.context import admin_required, any_key_required, login_required, principal, runtime
from api.extensions import Blueprint
from shared.accounts import people, storage
from shared.db.orm import User
from shared.llm import usage as token_usage

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
            row, token = people.attempt_login(
                db, rt.throttle, address, body["username"], body["password"], ttl
            )
            user = db.get_one(User, row.user_id)
        return {
            "token": token,
            "expires_at": row.expires_at,
            "user": user,
            "must_change_password": user.must_change_password,
        }


@blp.route("/auth/logout")
class Logout(MethodView):
    @any_key_required
    @blp.response(204)
    def post(self) -> None:
        """End the token of this request (any token, a scoped API key too)."""
        rt = runtime()
        with rt.db.session() as db:
            people.revoke_token(db, principal(), principal().token_id)
        rt.auth_changed(principal().user_id)


@blp.route("/tokens")
class Tokens(MethodView):
    @login_required
    @blp.response(200, TokenSchema(many=True))
    def get(self) -> list[Any]:
        rt = runtime()
        with rt.db.session() as db:
            return people.list_tokens(db, principal(), now=rt.clock.now())

    @login_required
    @blp.arguments(NewTokenSchema)
    @blp.response(201, IssuedTokenSchema)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """A new API key, shown once. With `scopes` it may call only the routes of those
        scopes (others answer 403 `missing_scope`); without, everything you may. An account
        holds at most API_KEYS_PER_USER live keys: past it, 409 `too_many_api_keys` until
        one is revoked."""
        rt = runtime()
        with rt.db.session() as db:
            row, token = people.create_api_key(
                db,
                principal(),
                body["name"],
                body["scopes"],
                limit=rt.settings.api_keys_per_user,
            )
        return {**{k: getattr(row, k) for k in TokenSchema().fields}, "token": token}


@blp.route("/tokens/current")
class CurrentToken(MethodView):
    @any_key_required
    @blp.response(200, CurrentTokenSchema)
    def get(self) -> dict[str, Any]:
        """What the token of this request may do: any token may ask, whatever its scopes."""
        me = principal()
        return {
            "id": me.token_id,
            "source": me.source,
            "full_access": me.scopes is None,
            "scopes": sorted(people.SCOPES if me.scopes is None else me.scopes),
        }


@blp.route("/tokens/<token_id:token_id>")
class TokenById(MethodView):
    @login_required
    @blp.response(204)
    def delete(self, token_id: str) -> None:
        rt = runtime()
        with rt.db.session() as db:
            people.revoke_token(db, principal(), token_id)
        rt.auth_changed(principal().user_id)


@blp.route("/users")
class Users(MethodView):
    @admin_required
    @blp.response(200, UserListedSchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        """Every account, oldest first, with its last activity."""
        fields = UserSchema().fields
        with runtime().db.session() as db:
            active = people.last_activity(db)
            return [
                {
                    **{name: getattr(user, name) for name in fields},
                    "last_active_at": active.get(user.id),
                }
                for user in people.list_users(db)
            ]

    @admin_required
    @blp.arguments(NewUserSchema)
    @blp.response(201, UserSchema)
    def post(self, body: dict[str, Any]) -> User:
        with runtime().db.session() as db:
            return people.create_user(
                db, body["username"], body["password"], is_admin=body["is_admin"]
            )


@blp.route("/users/<user_id:user_id>")
class UserById(MethodView):
    @admin_required
    @blp.arguments(UserChangeSchema)
    @blp.response(200, UserSchema)
    def patch(self, body: dict[str, Any], user_id: str) -> User:
        """Change an account: make it an administrator or not, disable or enable it, set
        its password (which ends its sign-ins and API keys; your own request's stays); with
        `must_change_password` true, a temporary one: the user's next sign-in may only
        change it (every other call is 403 `password_change_required`).
        Disabling stops the user's tokens, sign-ins and open event sockets at once. The
        last enabled administrator cannot be demoted or disabled (409 `last_admin`).
        `storage_quota_bytes` sets the user's own storage quota (null: the deployment's),
        `monthly_token_budget` their monthly token budget (null: the deployment's)."""
        rt, me = runtime(), principal()
        with rt.db.session() as db:
            user = people.update_user(
                db,
                user_id,
                is_admin=body.get("is_admin"),
                disabled=body.get("disabled"),
                password=body.get("password"),
                keep_token=me.token_id if user_id == me.user_id else None,
                must_change_password=body.get("must_change_password"),
            )
            if "storage_quota_bytes" in body:
                storage.set_quota(db, user, body["storage_quota_bytes"])
            if "monthly_token_budget" in body:
                token_usage.set_budget(db, user, body["monthly_token_budget"])
        rt.usage.forget(user.id)  # the month read again here (every process reads the limit anew)
        rt.auth_changed(user.id)
        return user

    @admin_required
    @blp.response(204)
    def delete(self, user_id: str) -> None:
        """Delete an account with everything of it: sessions, images, memory, folders,
        tokens, Teams links. Not undoable; the server's log keeps one line saying who did
        it. The last enabled administrator cannot be deleted (409 `last_admin`)."""
        rt, me = runtime(), principal()
        people.delete_user(rt.db, rt.store, user_id, actor=f"{me.username} ({me.user_id})")
        rt.auth_changed(user_id)


@blp.route("/me/password")
class MyPassword(MethodView):
    @login_required
    @blp.arguments(PasswordChangeSchema)
    @blp.response(200, PasswordChangedSchema)
    def put(self, body: dict[str, Any]) -> dict[str, int]:
        """Change your own password. The current one must be right (403 `wrong_password`;
        wrong tries count as failed logins of the account, and too many are 429). Every
        other sign-in and API key of yours ends; the one this request came with stays."""
        rt, me = runtime(), principal()
        with rt.db.session() as db:
            revoked = people.change_own_password(
                db, rt.throttle, me, body["current_password"], body["new_password"]
            )
        rt.auth_changed(me.user_id)
        return {"revoked_tokens": revoked}


@blp.route("/users/me")
class Me(MethodView):
    @login_required
    @blp.response(200, UserSchema)
    def get(self) -> User | None:
        me = principal()
        with runtime().db.session() as db:
            return db.get(User, me.user_id)
