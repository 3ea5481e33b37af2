from __future__ import annotations

import marshmallow as ma

from api.schemas import PageArgsSchema, StrictSchema

Length = ma.validate.Length
TITLE = Length(max=200)


class SessionSchema(ma.Schema):
    id = ma.fields.String()
    title = ma.fields.String(allow_none=True)
    title_pending = ma.fields.Boolean()
    source = ma.fields.String()
    temporary = ma.fields.Boolean()
    pinned = ma.fields.Boolean()
    archived = ma.fields.Boolean()
    folder_id = ma.fields.String(allow_none=True)
    message_count = ma.fields.Integer()
    image_count = ma.fields.Integer()
    created_at = ma.fields.AwareDateTime()
    updated_at = ma.fields.AwareDateTime()


class SessionPageSchema(ma.Schema):
    items = ma.fields.List(ma.fields.Nested(SessionSchema))
    next_cursor = ma.fields.String(allow_none=True)


class SessionListArgsSchema(PageArgsSchema):
    q = ma.fields.String(load_default=None, validate=Length(max=200))
    folder_id = ma.fields.String(load_default=None, validate=Length(max=32))
    archived = ma.fields.Boolean(load_default=False)


class NewSessionSchema(StrictSchema):
    title = ma.fields.String(load_default=None, allow_none=True, validate=TITLE)
    folder_id = ma.fields.String(load_default=None, allow_none=True, validate=Length(max=32))
    temporary = ma.fields.Boolean(load_default=False)


class SessionPatchSchema(StrictSchema):
    title = ma.fields.String(allow_none=True, validate=TITLE)
    pinned = ma.fields.Boolean()
    archived = ma.fields.Boolean()
    folder_id = ma.fields.String(allow_none=True, validate=Length(max=32))


class MessageSchema(ma.Schema):
    id = ma.fields.String()
    role = ma.fields.String()
    content = ma.fields.Raw(allow_none=True)
    created_at = ma.fields.String()
    name = ma.fields.String()
    tool_calls = ma.fields.Raw()
    tool_call_id = ma.fields.String()
    images = ma.fields.List(ma.fields.String())


class MessagesSchema(ma.Schema):
    items = ma.fields.List(ma.fields.Nested(MessageSchema))
