from __future__ import annotations

import marshmallow as ma

from api.schemas import Flag, Line, PageArgsSchema, QueryFlag, StrictSchema, Text
from shared.core.text import NON_BLANK_TEXT_PATTERN

Length = ma.validate.Length
TITLE = Length(max=200)
FOLDER = Length(max=32)


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
    q = Line(load_default=None, validate=Length(max=200), metadata={"description": "in titles"})
    folder_id = Line(load_default=None, validate=FOLDER)
    archived = QueryFlag(load_default=False)


class NewSessionSchema(StrictSchema):
    title = Line(load_default=None, allow_none=True, validate=TITLE)
    folder_id = Line(load_default=None, allow_none=True, validate=FOLDER)
    temporary = Flag(load_default=False)


class SessionPatchSchema(StrictSchema):
    title = Line(allow_none=True, validate=TITLE)
    pinned = Flag()
    archived = Flag()
    folder_id = Line(allow_none=True, validate=FOLDER)


class MessageSchema(ma.Schema):
    id = ma.fields.String()
    role = ma.fields.String()
    content = ma.fields.Raw(allow_none=True)
    created_at = ma.fields.String()
    name = ma.fields.String()
    tool_calls = ma.fields.Raw()
    tool_call_id = ma.fields.String()
    images = ma.fields.List(ma.fields.String())
    like = ma.fields.Dict(metadata={"description": "a liked turn's status: saving/saved/failed"})


class MessagesSchema(ma.Schema):
    items = ma.fields.List(ma.fields.Nested(MessageSchema))


class ContextFileSchema(StrictSchema):
    path = Line(required=True, validate=Length(min=1, max=1024))
    content = Text(required=True)


class TurnSchema(StrictSchema):
    content = Text(
        load_default=None,
        validate=Length(min=1, max=200_000),
        pattern=NON_BLANK_TEXT_PATTERN,
        pattern_error="content must not be empty",
        metadata={"description": "the message; leave it out with `retry: true`"},
    )
    project_context = ma.fields.List(
        ma.fields.Nested(ContextFileSchema), load_default=None, validate=Length(max=32)
    )
    cwd = Line(load_default=None, validate=Length(min=1, max=4096))
    system_prompt = Text(load_default=None, validate=Length(max=100_000))
    stream = Flag(load_default=False)
    retry = Flag(
        load_default=False,
        metadata={"description": "answer the last unanswered user message again"},
    )


class UsageSchema(ma.Schema):
    tokens = ma.fields.Integer()
    window = ma.fields.Integer(allow_none=True)
    percent = ma.fields.Float(allow_none=True)


class TurnResultSchema(ma.Schema):
    user_message = ma.fields.Nested(MessageSchema)
    assistant_message = ma.fields.Nested(MessageSchema)
    steps = ma.fields.List(ma.fields.Nested(MessageSchema))
    context = ma.fields.Nested(UsageSchema)
    memory_writes = ma.fields.List(
        ma.fields.Dict(), metadata={"description": "memory writes done during the turn"}
    )


class SummarySchema(ma.Schema):
    summary = ma.fields.String()
    covered_through = ma.fields.String()
    created_at = ma.fields.String()


class ContextViewSchema(UsageSchema):
    system_prompt = ma.fields.String()
    summary = ma.fields.Nested(SummarySchema, allow_none=True)
    message_count = ma.fields.Integer(metadata={"description": "messages sent after the summary"})
