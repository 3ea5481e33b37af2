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
    like = ma.fields.Dict(metadata={"description": "a liked turn's status: saving/saved/failed"})


class MessagesSchema(ma.Schema):
    items = ma.fields.List(ma.fields.Nested(MessageSchema))


class ContextFileSchema(StrictSchema):
    path = ma.fields.String(required=True, validate=Length(min=1, max=1024))
    content = ma.fields.String(required=True)


class ContentField(ma.fields.Field):
    """A message's content: text, or OpenAI-style content parts (`text` and `image_url` with
    a data: URL); the parts themselves are checked by the domain."""

    MAX_TEXT = 200_000
    MAX_PARTS = 64

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(value, str):
            if len(value) > self.MAX_TEXT:
                raise ma.ValidationError(f"Longer than maximum length {self.MAX_TEXT}.")
            return value
        if isinstance(value, list) and all(isinstance(part, dict) for part in value):
            if len(value) > self.MAX_PARTS:
                raise ma.ValidationError(f"At most {self.MAX_PARTS} content parts.")
            return value
        raise ma.ValidationError("Text, or a list of content parts.")


class TurnSchema(StrictSchema):
    content = ContentField(
        load_default=None,
        metadata={
            "description": "text, or content parts: {type: text, text} and "
            "{type: image_url, image_url: {url: 'data:image/png;base64,...'}}"
        },
    )
    project_context = ma.fields.List(
        ma.fields.Nested(ContextFileSchema), load_default=None, validate=Length(max=32)
    )
    cwd = ma.fields.String(load_default=None, validate=Length(min=1, max=4096))
    system_prompt = ma.fields.String(load_default=None, validate=Length(max=100_000))
    stream = ma.fields.Boolean(load_default=False)
    retry = ma.fields.Boolean(
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
