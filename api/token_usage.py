"""Model tokens per user: the `tokens` part of GET /me/usage (api/usage.py), and the
administrators' GET /admin/usage, every user's tokens in a month with their budget.

What is counted, and how a budget is kept, is in shared/llm/usage.py.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import admin_required, runtime
from api.extensions import Blueprint
from api.schemas import Line, Schema, StrictSchema
from shared.llm import usage

blp = Blueprint("token_usage", __name__, description="Model tokens per user, and budgets")


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
        pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
        pattern_error="a month is YYYY-MM",
        metadata={"description": "YYYY-MM (UTC); default: this month"},
    )


@blp.route("/admin/usage")
class AdminUsage(MethodView):
    @admin_required
    @blp.arguments(MonthArgsSchema, location="query")
    @blp.response(200, AllTokenUsageSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Every user's model tokens in a month (default: this one), per offering and role,
        with their budget (administrators only). Users who used none are listed with 0."""
        return usage.all_usage(runtime().usage, args.get("month"))
