from __future__ import annotations

import marshmallow as ma

from api.schemas import StrictSchema
from shared.llm.catalog import ROLES

Length = ma.validate.Length
Tokens = ma.validate.Range(min=1, max=10_000_000)


class OfferingSchema(ma.Schema):
    id = ma.fields.String()
    base_url = ma.fields.String()
    model = ma.fields.String()
    api_key_env = ma.fields.String(allow_none=True)
    api_key_set = ma.fields.Boolean()
    context_window = ma.fields.Integer(allow_none=True)
    max_output_tokens = ma.fields.Integer(allow_none=True)
    builtin = ma.fields.Boolean()


class NewOfferingSchema(StrictSchema):
    id = ma.fields.String(required=True, validate=Length(min=1, max=64))
    base_url = ma.fields.URL(required=True, schemes={"http", "https"}, require_tld=False)
    model = ma.fields.String(required=True, validate=Length(min=1, max=200))
    api_key_env = ma.fields.String(load_default=None, allow_none=True, validate=Length(max=100))
    context_window = ma.fields.Integer(load_default=None, allow_none=True, validate=Tokens)
    max_output_tokens = ma.fields.Integer(load_default=None, allow_none=True, validate=Tokens)


class RoleSchema(ma.Schema):
    role = ma.fields.String(validate=ma.validate.OneOf(ROLES))
    offering_id = ma.fields.String(allow_none=True)
    explicit = ma.fields.Boolean(
        metadata={"description": "false when the role falls back to the chat's offering"}
    )


class RoleUpdateSchema(StrictSchema):
    offering_id = ma.fields.String(required=True, validate=Length(min=1, max=64))
