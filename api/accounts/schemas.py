from __future__ import annotations

import marshmallow as ma

from api.schemas import StrictSchema

Length = ma.validate.Length


class LoginSchema(StrictSchema):
    username = ma.fields.String(required=True, validate=Length(min=1, max=64))
    password = ma.fields.String(required=True, validate=Length(min=1, max=1024))


class UserSchema(ma.Schema):
    id = ma.fields.String()
    username = ma.fields.String()
    is_admin = ma.fields.Boolean()
    created_at = ma.fields.AwareDateTime()


class LoginResultSchema(ma.Schema):
    token = ma.fields.String()
    expires_at = ma.fields.AwareDateTime()
    user = ma.fields.Nested(UserSchema)


class NewUserSchema(StrictSchema):
    username = ma.fields.String(required=True, validate=Length(min=1, max=64))
    password = ma.fields.String(required=True, validate=Length(min=8, max=1024))
    is_admin = ma.fields.Boolean(load_default=False)


class NewTokenSchema(StrictSchema):
    name = ma.fields.String(required=True, validate=Length(min=1, max=100))


class TokenSchema(ma.Schema):
    id = ma.fields.String()
    name = ma.fields.String()
    source = ma.fields.String()
    created_at = ma.fields.AwareDateTime()
    expires_at = ma.fields.AwareDateTime(allow_none=True)
    last_used_at = ma.fields.AwareDateTime(allow_none=True)


class IssuedTokenSchema(TokenSchema):
    token = ma.fields.String()
