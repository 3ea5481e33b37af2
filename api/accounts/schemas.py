from __future__ import annotations

from typing import Any

import marshmallow as ma

from api.schemas import Flag, Int, Line, Schema, StrictSchema
from shared.accounts.people import (
    MAX_PASSWORD,
    MIN_PASSWORD,
    PASSWORD_RULE,
    SCOPES,
    TOKEN_NAME_MAX,
    USERNAME_PATTERN,
    USERNAME_RULE,
)
from shared.core.text import NON_BLANK_LINE_PATTERN

Length = ma.validate.Length


def username(**kwargs: object) -> Line:
    return Line(
        required=True,
        validate=Length(min=1, max=64),
        pattern=USERNAME_PATTERN,
        pattern_error=f"a username is {USERNAME_RULE}",
        metadata={"description": f"{USERNAME_RULE}; not case-sensitive"},
        **kwargs,
    )


class LoginSchema(StrictSchema):
    username = username()
    password = Line(required=True, validate=Length(min=1, max=MAX_PASSWORD))


def password_field(description: str = PASSWORD_RULE, **kwargs: Any) -> Line:
    return Line(
        validate=Length(min=MIN_PASSWORD, max=MAX_PASSWORD),
        metadata={"description": description},
        **kwargs,
    )


class UserSchema(Schema):
    id = ma.fields.String()
    username = ma.fields.String()
    is_admin = ma.fields.Boolean()
    disabled = ma.fields.Boolean(
        metadata={"description": "a disabled user's tokens and sign-ins are refused"}
    )
    created_at = ma.fields.AwareDateTime()
    storage_quota_bytes = ma.fields.Integer(
        allow_none=True,
        metadata={"description": "the user's own storage quota; null: the deployment's"},
    )
    monthly_token_budget = ma.fields.Integer(
        allow_none=True,
        metadata={"description": "the user's own monthly token budget; null: the deployment's"},
    )
    must_change_password = ma.fields.Boolean(
        metadata={
            "description": "true: an administrator reset the password; the next sign-in "
            "may only change it (every other call is 403 `password_change_required`)"
        }
    )


class UserListedSchema(UserSchema):
    last_active_at = ma.fields.AwareDateTime(
        allow_none=True,
        metadata={
            "description": "the last use of any of the user's sign-ins, login tokens "
            "or API keys (to within five minutes); null: none yet"
        },
    )


class UserChangeSchema(StrictSchema):
    """What an administrator may change of an account; absent fields stay as they are."""

    is_admin = Flag()
    disabled = Flag(
        metadata={
            "description": "true: the user's tokens, sign-ins and open event sockets stop "
            "working at once (kept, and valid again once enabled)"
        }
    )
    password = password_field(
        f"a new password ({PASSWORD_RULE}); ends the user's sign-ins and API keys"
    )
    must_change_password = Flag(
        metadata={
            "description": "true with a password: a temporary one; the user's next sign-in "
            "may only change it (every other call is 403 `password_change_required`)"
        }
    )
    storage_quota_bytes = Int(
        allow_none=True,
        validate=ma.validate.Range(min=0),
        metadata={
            "description": "the bytes of storage the user may fill (0: no quota); null: "
            "the deployment's STORAGE_QUOTA_BYTES (per user, not per group)"
        },
    )
    monthly_token_budget = Int(
        allow_none=True,
        validate=ma.validate.Range(min=0),
        metadata={
            "description": "model tokens (prompt and completion) the user may use in a "
            "calendar month, UTC (0: no budget); null: the deployment's MONTHLY_TOKEN_BUDGET"
        },
    )


class PasswordChangeSchema(StrictSchema):
    current_password = Line(required=True, validate=Length(min=1, max=MAX_PASSWORD))
    new_password = password_field(required=True)


class PasswordChangedSchema(Schema):
    revoked_tokens = ma.fields.Integer(
        metadata={"description": "how many other sign-ins and API keys were ended"}
    )


class LoginResultSchema(Schema):
    token = ma.fields.String()
    expires_at = ma.fields.AwareDateTime()
    user = ma.fields.Nested(UserSchema)
    must_change_password = ma.fields.Boolean(
        metadata={
            "description": "true: this token may only change the password (PUT "
            "/me/password) or log out until it is changed"
        }
    )


class NewUserSchema(StrictSchema):
    username = username()
    password = password_field(required=True)
    is_admin = Flag(load_default=False)


class NewTokenSchema(StrictSchema):
    name = Line(
        required=True,
        validate=Length(min=1, max=TOKEN_NAME_MAX),
        pattern=NON_BLANK_LINE_PATTERN,
        pattern_error="a name needs at least one character that is not a space",
    )
    scopes = ma.fields.List(
        Line(
            validate=ma.validate.OneOf(
                list(SCOPES), error="unknown scope {input!r}; the scopes are {choices}"
            )
        ),
        load_default=None,
        validate=Length(max=len(SCOPES)),
        metadata={
            "description": "limit the key to these scopes; left out or empty, it may do "
            "everything you may. " + "; ".join(f"`{name}`: {what}" for name, what in SCOPES.items())
        },
    )


def _scopes(token: Any) -> list[str] | None:
    """A token's scopes (a row, or the dict of one a view built); None: full access."""
    stored = token.get("scopes") if isinstance(token, dict) else token.scopes
    return sorted(stored.split()) if stored else None


class TokenSchema(Schema):
    id = ma.fields.String()
    name = ma.fields.String()
    source = ma.fields.String()
    scopes = ma.fields.Function(
        _scopes,
        metadata={"description": "what the key is limited to; null: full access"},
    )
    created_at = ma.fields.AwareDateTime()
    expires_at = ma.fields.AwareDateTime(allow_none=True)
    last_used_at = ma.fields.AwareDateTime(allow_none=True)


class IssuedTokenSchema(TokenSchema):
    token = ma.fields.String()


class CurrentTokenSchema(Schema):
    """What the token a request presents may do."""

    id = ma.fields.String()
    source = ma.fields.String()
    full_access = ma.fields.Boolean(
        metadata={"description": "true: no scopes, anything the user may do"}
    )
    scopes = ma.fields.List(
        ma.fields.String(),
        metadata={"description": "the scopes it may use (all of them with full access)"},
    )
