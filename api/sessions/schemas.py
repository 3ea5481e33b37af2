from __future__ import annotations

import marshmallow as ma

from api.schemas import Flag, Line, PageArgsSchema, QueryFlag, Schema, StrictSchema, Text
from shared.chat.project_context import MAX_WINDOW
from shared.core import text
from shared.core.messages import MAX_MESSAGE_CHARS
from shared.core.text import NON_BLANK_TEXT_PATTERN
from shared.index.listing import CLIENT_SOURCES, SOURCES, UNFILED

Length = ma.validate.Length
TITLE = Length(max=200)
FOLDER = Length(max=32)


class SessionSchema(Schema):
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
    updated_at = ma.fields.AwareDateTime(
        metadata={
            "description": "the last message's time (the creation's before one): the list's "
            "order, which a rename, a pin, a move or the trash leave as it is"
        }
    )
    forked_from = ma.fields.String(allow_none=True, metadata={"description": "a fork's origin"})
    imported = ma.fields.String(
        allow_none=True,
        metadata={
            "description": "how an imported session came: `bundle` (POST /sessions/import) "
            "or `shared` (a shared link forked); null for any other"
        },
    )
    deleted_at = ma.fields.AwareDateTime(
        allow_none=True, metadata={"description": "in the trash since (purged 30 days later)"}
    )


class SnippetSchema(Schema):
    text = ma.fields.String()
    highlights = ma.fields.List(
        ma.fields.List(ma.fields.Integer()),
        metadata={"description": "[start, end) offsets of the matches in text"},
    )


class MatchSchema(Schema):
    role = ma.fields.String(metadata={"description": "title, user, assistant or tool"})
    message_id = ma.fields.String(allow_none=True)


class SessionItemSchema(SessionSchema):
    """A listed session; a search result also has its snippet, where it matched and its score."""

    snippet = ma.fields.Nested(SnippetSchema)
    match = ma.fields.Nested(MatchSchema)
    score = ma.fields.Float()


class SessionPageSchema(Schema):
    items = ma.fields.List(ma.fields.Nested(SessionItemSchema))
    next_cursor = ma.fields.String(allow_none=True)


class SessionListArgsSchema(PageArgsSchema):
    q = Line(
        load_default=None,
        validate=Length(max=200),
        metadata={
            "description": "search titles and text: word forms match (`deploy` finds "
            'deployment), `"word"` that word only, `word*` a prefix as typed'
        },
    )
    folder_id = Line(
        load_default=None,
        validate=FOLDER,
        metadata={"description": f"a folder's sessions; `{UNFILED}` for those in no folder"},
    )
    archived = QueryFlag(load_default=False)
    trash = QueryFlag(load_default=False, metadata={"description": "the trash"})
    source = Line(load_default=None, validate=ma.validate.OneOf(SOURCES))


class DeleteArgsSchema(StrictSchema):
    purge = QueryFlag(
        load_default=False, metadata={"description": "remove at once instead of the trash"}
    )


class ForkSchema(StrictSchema):
    title = Line(load_default=None, validate=TITLE)
    message_id = Line(
        load_default=None,
        validate=Length(min=1, max=40),
        metadata={"description": "copy up to this message (default: all of them)"},
    )


class NewSessionSchema(StrictSchema):
    title = Line(load_default=None, allow_none=True, validate=TITLE)
    folder_id = Line(load_default=None, allow_none=True, validate=FOLDER)
    temporary = Flag(load_default=False)
    source = Line(
        load_default=None,
        validate=ma.validate.OneOf(CLIENT_SOURCES),
        metadata={
            "description": "the client making the session: `cli` for the console clients "
            "(their sessions are titled 1, 2, 3... unless SESSION_TITLE_MODE says otherwise); "
            "left out, it is how the caller signed in (`web`, or `api` for an API key)"
        },
    )


class SessionPatchSchema(StrictSchema):
    title = Line(allow_none=True, validate=TITLE)
    pinned = Flag()
    archived = Flag()
    folder_id = Line(allow_none=True, validate=FOLDER)


class MessageSchema(Schema):
    id = ma.fields.String()
    role = ma.fields.String()
    content = ma.fields.Raw(allow_none=True)
    created_at = ma.fields.String()
    name = ma.fields.String()
    tool_calls = ma.fields.Raw()
    tool_call_id = ma.fields.String()
    images = ma.fields.List(ma.fields.String())
    like = ma.fields.Dict(metadata={"description": "a liked turn's status: saving/saved/failed"})


class MessagesSchema(Schema):
    items = ma.fields.List(ma.fields.Nested(MessageSchema))


class ContextFileSchema(StrictSchema):
    path = Line(required=True, validate=Length(min=1, max=1024))
    content = Text(required=True)


class ContentField(ma.fields.Field):
    """A message's content: text, or OpenAI-style content parts (`text` and `image_url` with
    a data: URL); the parts themselves are checked by the domain."""

    MAX_TEXT = MAX_MESSAGE_CHARS
    MAX_PARTS = 64

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list) and value and all(isinstance(part, dict) for part in value):
            if len(value) > self.MAX_PARTS:
                raise ma.ValidationError(f"At most {self.MAX_PARTS} content parts.")
            for part in value:
                if isinstance(part.get("text"), str):
                    self._text(part["text"])
            return value
        raise ma.ValidationError("Text, or a list of content parts.")

    def _text(self, value: str) -> str:
        """The text rule, as for every string a client sends, and no blank message."""
        if len(value) > self.MAX_TEXT:
            raise ma.ValidationError(f"Longer than maximum length {self.MAX_TEXT}.")
        found = text.problem(value)
        if found is not None:
            raise ma.ValidationError(found)
        if not value.strip():
            raise ma.ValidationError("content must not be empty")
        return value


class TurnSchema(StrictSchema):
    content = ContentField(
        load_default=None,
        metadata={
            "description": "the message: text, or content parts {type: text, text} and "
            "{type: image_url, image_url: {url: 'data:image/png;base64,...'}}; leave it out "
            "with `retry: true` or `regenerate: true`",
            "oneOf": [
                {
                    "type": "string",
                    "maxLength": MAX_MESSAGE_CHARS,
                    "pattern": NON_BLANK_TEXT_PATTERN,
                },
                {"type": "array", "items": {"type": "object"}, "minItems": 1, "maxItems": 64},
            ],
        },
    )
    project_context = ma.fields.List(
        ma.fields.Nested(ContextFileSchema), load_default=None, validate=Length(max=32)
    )
    cwd = Line(load_default=None, validate=Length(min=1, max=4096))
    system_prompt = Text(load_default=None, validate=Length(max=100_000))
    context_window = ma.fields.Integer(
        load_default=None,
        strict=True,
        validate=ma.validate.Range(min=1, max=MAX_WINDOW),
        metadata={
            "description": "the project's bound on the model's context window, in tokens "
            "(eonyx.json's `context_window`): the smaller of it and the model's applies"
        },
    )
    offering = Line(
        load_default=None,
        validate=Length(min=1, max=64),
        metadata={
            "description": "the offering (GET /models/offerings) that answers this turn, "
            "instead of the chat role's; one kept for groups the caller is in none of is a "
            "403 `offering_not_allowed`"
        },
    )
    stream = Flag(load_default=False)
    retry = Flag(
        load_default=False,
        metadata={"description": "answer the last unanswered user message again"},
    )
    regenerate = Flag(
        load_default=False,
        metadata={
            "description": "answer the last user message again, without `content`: the new "
            "answer replaces the old one (and its tool steps) in the conversation; the session "
            "file keeps both. A session with no user message is a 400 "
            "`nothing_to_regenerate`"
        },
    )
    edit = Line(
        load_default=None,
        validate=Length(min=1, max=40),
        metadata={
            "description": "edit and resend: the id of a user message of the conversation, "
            "which `content` replaces; that message and everything after it leave the "
            "conversation (the session file keeps them), and the new message is answered. "
            "An unknown id is a 404 `message_not_found`, another role's a 400"
        },
    )


class FirstTurnSchema(TurnSchema, NewSessionSchema):
    """A turn that makes its session: a turn's fields (nothing to answer again) and a new
    session's."""

    class Meta:
        exclude = ("retry", "regenerate", "edit")


class UsageSchema(Schema):
    tokens = ma.fields.Integer()
    window = ma.fields.Integer(allow_none=True)
    percent = ma.fields.Float(allow_none=True)


class TurnResultSchema(Schema):
    session_id = ma.fields.String()
    user_message = ma.fields.Nested(MessageSchema)
    assistant_message = ma.fields.Nested(MessageSchema)
    steps = ma.fields.List(ma.fields.Nested(MessageSchema))
    context = ma.fields.Nested(UsageSchema)
    memory_writes = ma.fields.List(
        ma.fields.Dict(), metadata={"description": "memory writes done during the turn"}
    )


class SummarySchema(Schema):
    summary = ma.fields.String()
    covered_through = ma.fields.String()
    created_at = ma.fields.String()


class ContextViewSchema(UsageSchema):
    system_prompt = ma.fields.String()
    summary = ma.fields.Nested(SummarySchema, allow_none=True)
    message_count = ma.fields.Integer(metadata={"description": "messages sent after the summary"})
