"""What a user uses of the deployment: GET /me/usage; for administrators every user's figures
(GET /usage/users) and every user's model tokens in a month with their budget
(GET /admin/usage).

The response has one key per resource, each described by its own schema below:

    {"storage": {"used_bytes", "quota_bytes", "by_kind": {...}}}   (shared.accounts.storage)
    {"tokens": {"month", "prompt_tokens", ..., "by_offering", "budget"}}   (shared.llm.usage)

Another resource adds its key to `MyUsageSchema` and its figures to `usage_of` (one place for
the shape, so /me/usage and the admin list stay the same). What is counted, and how budgets
are kept: shared/accounts/storage.py and shared/llm/usage.py.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import admin_required, login_required, principal, runtime
from api.extensions import Blueprint
from api.schemas import Line, QueryFlag, Schema, StrictSchema
from shared.accounts import people, storage
from shared.files.usage import KINDS
from shared.llm import usage as token_usage
from shared.runtime import Runtime

blp = Blueprint(
    "usage", __name__, description="What a user stores and spends, and may: storage, model tokens"
)


class TokenBudgetSchema(Schema):
    limit = ma.fields.Integer(
        allow_none=True,
        metadata={
            "description": "tokens a month (the user's own budget, else MONTHLY_TOKEN_BUDGET); "
            "null: no budget"
        },
    )
    used = ma.fields.Integer(metadata={"description": "prompt and completion tokens this month"})
    remaining = ma.fields.Integer(allow_none=True)
    resets_at = ma.fields.String(
        metadata={"description": "when the month ends: the first of the next month, UTC"}
    )


class TokenLineSchema(Schema):
    offering = ma.fields.String(metadata={"description": "the model offering's id"})
    role = ma.fields.String(
        metadata={"description": "the task: chat, session_title, summarization, ..."}
    )
    calls = ma.fields.Integer()
    prompt_tokens = ma.fields.Integer()
    completion_tokens = ma.fields.Integer()
    total_tokens = ma.fields.Integer()


class TokenUsageSchema(Schema):
    month = ma.fields.String(metadata={"description": "YYYY-MM, UTC"})
    calls = ma.fields.Integer()
    prompt_tokens = ma.fields.Integer()
    completion_tokens = ma.fields.Integer()
    total_tokens = ma.fields.Integer()
    by_offering = ma.fields.List(ma.fields.Nested(TokenLineSchema))
    budget = ma.fields.Nested(TokenBudgetSchema)


class UserTokenUsageSchema(TokenUsageSchema):
    user_id = ma.fields.String()
    username = ma.fields.String()
    monthly_token_budget = ma.fields.Integer(
        allow_none=True,
        metadata={"description": "the user's own budget; null: the deployment's default"},
    )


class AllTokenUsageSchema(Schema):
    month = ma.fields.String()
    users = ma.fields.List(ma.fields.Nested(UserTokenUsageSchema))


class MonthArgsSchema(StrictSchema):
    month = Line(
        pattern=r"^(19[7-9]\d|2\d{3})-(0[1-9]|1[0-2])$",
        pattern_error="a month is YYYY-MM, from 1970-01 to 2999-12",
        metadata={"description": "YYYY-MM (UTC); default: this month"},
    )


class StorageUsageSchema(Schema):
    used_bytes = ma.fields.Integer(
        metadata={"description": "bytes of DATA_DIR the user's files take (hard links once)"}
    )
    quota_bytes = ma.fields.Integer(
        metadata={"description": "the user's quota (STORAGE_QUOTA_BYTES or their own); 0: none"}
    )
    by_kind = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.Integer(),
        metadata={"description": f"bytes by kind: {', '.join(KINDS)}"},
    )


class MyUsageSchema(Schema):
    storage = ma.fields.Nested(StorageUsageSchema)
    tokens = ma.fields.Nested(TokenUsageSchema)


class UserUsageSchema(MyUsageSchema):
    user_id = ma.fields.String()
    username = ma.fields.String()


class UsageArgsSchema(StrictSchema):
    fresh = QueryFlag(
        load_default=False,
        metadata={"description": "measure the files on disk now instead of the running figure"},
    )


def usage_of(rt: Runtime, user_id: str, *, fresh: bool = False) -> dict[str, Any]:
    """Everything /me/usage shows for one user."""
    return {
        "storage": storage.storage_usage(rt, user_id, fresh=fresh),
        "tokens": token_usage.my_usage(rt.usage, user_id),
    }


@blp.route("/me/usage")
class MyUsage(MethodView):
    @login_required
    @blp.arguments(UsageArgsSchema, location="query")
    @blp.response(200, MyUsageSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """What you store and may store. Storage counts every file of yours under the data
        directory (sessions, images, the trash, memory files and their backups), each file
        once; over the quota, writes that add bytes are refused (507 `quota_exceeded`)
        while reading and deleting still work."""
        return usage_of(runtime(), principal().user_id, fresh=args["fresh"])


@blp.route("/usage/users")
class UsersUsage(MethodView):
    @admin_required
    @blp.arguments(UsageArgsSchema, location="query")
    @blp.response(200, UserUsageSchema(many=True))
    def get(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Every user's figures (administrators only)."""
        rt = runtime()
        with rt.db.session() as db:
            users = [(user.id, user.username) for user in people.list_users(db)]
        return [
            {"user_id": user_id, "username": name, **usage_of(rt, user_id, fresh=args["fresh"])}
            for user_id, name in users
        ]


@blp.route("/admin/usage")
class AdminUsage(MethodView):
    @admin_required
    @blp.arguments(MonthArgsSchema, location="query")
    @blp.response(200, AllTokenUsageSchema)
    def get(self, args: dict[str, Any]) -> token_usage.AllUsage:
        """Every user's model tokens in a month (default: this one), per offering and role,
        with their budget (administrators only). Users who used none are listed with 0."""
        return token_usage.all_usage(runtime().usage, args.get("month"))
