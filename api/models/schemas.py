from __future__ import annotations

import marshmallow as ma

from api.schemas import IdList, Int, Line, Schema, StrictSchema
from shared.core.text import NON_BLANK_LINE_PATTERN
from shared.llm.models import (
    API_KEY_ENV_PATTERN,
    API_KEY_ENV_RULE,
    BASE_URL_PATTERN,
    BASE_URL_RULE,
    OFFERING_ID_RE,
    OFFERING_ID_RULE,
    ROLES,
)

Length = ma.validate.Length
Tokens = ma.validate.Range(min=1, max=10_000_000)


def offering_id(**kwargs: object) -> Line:
    return Line(
        validate=Length(min=1, max=64),
        pattern=OFFERING_ID_RE.pattern,
        pattern_error=f"an offering id is {OFFERING_ID_RULE}",
        **kwargs,
    )


class OfferingSchema(Schema):
    id = ma.fields.String()
    base_url = ma.fields.String(
        metadata={"description": "for non-admins, without credentials: userinfo and query values"}
    )
    model = ma.fields.String()
    api_key_env = ma.fields.String(allow_none=True, metadata={"description": "admins only"})
    api_key_set = ma.fields.Boolean(
        metadata={"description": "admins only: whether the variable is set on this server"}
    )
    context_window = ma.fields.Integer(allow_none=True)
    max_output_tokens = ma.fields.Integer(allow_none=True)
    builtin = ma.fields.Boolean()
    allowed_groups = ma.fields.List(
        ma.fields.String(),
        metadata={
            "description": "admins only: the ids of the groups whose members may use it "
            "(and administrators); empty: everyone"
        },
    )


class OfferingUpdateSchema(StrictSchema):
    allowed_groups = IdList(
        most=1000,
        description="the ids of the groups (GET /groups) whose members may use the "
        "offering, besides administrators; empty: everyone. Unknown ids are a 422 "
        "`unknown_groups`",
    )


class NewOfferingSchema(StrictSchema):
    id = offering_id(required=True)
    base_url = Line(
        required=True,
        validate=Length(min=1, max=500),
        pattern=BASE_URL_PATTERN,
        pattern_error=BASE_URL_RULE,
    )
    model = Line(required=True, validate=Length(min=1, max=200), pattern=NON_BLANK_LINE_PATTERN)
    api_key_env = Line(
        load_default=None,
        allow_none=True,
        validate=Length(max=100),
        pattern=API_KEY_ENV_PATTERN,
        pattern_error=f"api_key_env must be {API_KEY_ENV_RULE}",
        metadata={"description": API_KEY_ENV_RULE},
    )
    context_window = Int(load_default=None, allow_none=True, validate=Tokens)
    max_output_tokens = Int(load_default=None, allow_none=True, validate=Tokens)


class RoleSchema(Schema):
    role = ma.fields.String(validate=ma.validate.OneOf(ROLES))
    offering_id = ma.fields.String(allow_none=True)
    explicit = ma.fields.Boolean(
        metadata={"description": "false when the role falls back to the chat's offering"}
    )


class RoleUpdateSchema(StrictSchema):
    offering_id = offering_id(
        required=True,
        allow_none=True,
        metadata={"description": "null: no offering of its own, the role follows the chat's"},
    )
