from __future__ import annotations

import marshmallow as ma

from api.schemas import PageArgsSchema, StrictSchema
from shared.storage.listing import SOURCES, UNFILED

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
    forked_from = ma.fields.String(allow_none=True, metadata={"description": "a fork's origin"})
    deleted_at = ma.fields.AwareDateTime(
        allow_none=True, metadata={"description": "in the trash since (purged 30 days later)"}
    )


class SnippetSchema(ma.Schema):
    text = ma.fields.String()
    highlights = ma.fields.List(
        ma.fields.List(ma.fields.Integer()),
        metadata={"description": "[start, end) offsets of the matches in text"},
    )


class MatchSchema(ma.Schema):
    role = ma.fields.String(metadata={"description": "title, user, assistant or tool"})
    message_id = ma.fields.String(allow_none=True)


class SessionItemSchema(SessionSchema):
    """A listed session; a search result also has its snippet, where it matched and its score."""

    snippet = ma.fields.Nested(SnippetSchema)
    match = ma.fields.Nested(MatchSchema)
    score = ma.fields.Float()


class SessionPageSchema(ma.Schema):
    items = ma.fields.List(ma.fields.Nested(SessionItemSchema))
    next_cursor = ma.fields.String(allow_none=True)


class SessionListArgsSchema(PageArgsSchema):
    q = ma.fields.String(
        load_default=None,
        validate=Length(max=200),
        metadata={"description": "search titles and text: whole words, `word*` for a prefix"},
    )
    folder_id = ma.fields.String(
        load_default=None,
        validate=Length(max=32),
        metadata={"description": f"a folder's sessions; `{UNFILED}` for those in no folder"},
    )
    archived = ma.fields.Boolean(load_default=False)
    trash = ma.fields.Boolean(load_default=False, metadata={"description": "the trash"})
    source = ma.fields.String(load_default=None, validate=ma.validate.OneOf(SOURCES))


class DeleteArgsSchema(StrictSchema):
    purge = ma.fields.Boolean(
        load_default=False, metadata={"description": "remove at once instead of the trash"}
    )


class ForkSchema(StrictSchema):
    title = ma.fields.String(load_default=None, validate=TITLE)
    message_id = ma.fields.String(
        load_default=None,
        validate=Length(min=1, max=40),
        metadata={"description": "copy up to this message (default: all of them)"},
    )


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


class TurnSchema(StrictSchema):
    content = ma.fields.String(load_default=None, validate=Length(max=200_000))
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
