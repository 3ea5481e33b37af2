"""Request bodies of the OpenAI-compatible facade. The schema types the fields OpenAI
documents and lets every other field through to the domain, which refuses what it cannot
honour by name (shared/integrations/openai_request.py)."""

from __future__ import annotations

import marshmallow as ma

from api.schemas import Line

Raw = ma.fields.Raw


class CompletionRequestSchema(ma.Schema):
    class Meta:
        unknown = ma.INCLUDE

    model = Line(required=True, metadata={"description": "an offering id (GET /v1/models)"})
    messages = ma.fields.List(ma.fields.Raw(), required=True)
    stream = ma.fields.Boolean(load_default=False)
    stream_options = ma.fields.Dict(allow_none=True)
    temperature = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 2))
    top_p = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 1))
    max_tokens = ma.fields.Integer(allow_none=True, validate=ma.validate.Range(1))
    max_completion_tokens = ma.fields.Integer(allow_none=True, validate=ma.validate.Range(1))
    stop = Raw(allow_none=True, metadata={"description": "a string or up to 4 strings"})
    seed = ma.fields.Integer(allow_none=True)
    presence_penalty = ma.fields.Float(allow_none=True, validate=ma.validate.Range(-2, 2))
    frequency_penalty = ma.fields.Float(allow_none=True, validate=ma.validate.Range(-2, 2))
    response_format = ma.fields.Dict(allow_none=True)
    tools = ma.fields.List(ma.fields.Dict(), allow_none=True)
    tool_choice = Raw(
        allow_none=True,
        metadata={"description": "none, auto, required or {type: function, function: {name}}"},
    )
    parallel_tool_calls = ma.fields.Boolean(allow_none=True)
    user = ma.fields.String(allow_none=True)
    store = ma.fields.Boolean(allow_none=True, metadata={"description": "false: temporary"})
    metadata = ma.fields.Dict(allow_none=True)


class ResponsesRequestSchema(ma.Schema):
    class Meta:
        unknown = ma.INCLUDE

    model = Line(required=True, metadata={"description": "an offering id (GET /v1/models)"})
    input = ma.fields.Raw(required=True, metadata={"description": "a string or input items"})
    instructions = ma.fields.String(allow_none=True)
    previous_response_id = ma.fields.String(allow_none=True)
    stream = ma.fields.Boolean(load_default=False)
    store = ma.fields.Boolean(allow_none=True, metadata={"description": "false: temporary"})
    tools = ma.fields.List(ma.fields.Dict(), allow_none=True)
    tool_choice = Raw(allow_none=True)
    temperature = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 2))
    top_p = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 1))
    max_output_tokens = ma.fields.Integer(allow_none=True, validate=ma.validate.Range(1))
    text = ma.fields.Dict(allow_none=True)


class OpenAIErrorBodySchema(ma.Schema):
    message = ma.fields.String(required=True)
    type = ma.fields.String(required=True)
    param = ma.fields.String(allow_none=True, required=True)
    code = ma.fields.String(allow_none=True, required=True)


class OpenAIErrorSchema(ma.Schema):
    """What every facade error answers: OpenAI's shape, so OpenAI clients can read it."""

    error = ma.fields.Nested(OpenAIErrorBodySchema, required=True)


class MessagesRequestSchema(ma.Schema):
    """Anthropic's Messages request (`POST /v1/messages`); every other field is let through
    and ignored by name (shared/integrations/anthropic_messages.py)."""

    class Meta:
        unknown = ma.INCLUDE

    model = Line(required=True, metadata={"description": "an offering id (GET /v1/models)"})
    max_tokens = ma.fields.Integer(required=True, validate=ma.validate.Range(1))
    messages = ma.fields.List(ma.fields.Raw(), required=True)
    system = Raw(allow_none=True, metadata={"description": "a string or text blocks"})
    stream = ma.fields.Boolean(load_default=False)
    tools = ma.fields.List(ma.fields.Dict(), allow_none=True)
    tool_choice = ma.fields.Dict(allow_none=True)
    stop_sequences = ma.fields.List(ma.fields.String(), allow_none=True)
    temperature = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 1))
    top_p = ma.fields.Float(allow_none=True, validate=ma.validate.Range(0, 1))
    metadata = ma.fields.Dict(allow_none=True)


class CountTokensRequestSchema(MessagesRequestSchema):
    """What `POST /v1/messages/count_tokens` counts: a Messages request without max_tokens."""

    max_tokens = ma.fields.Integer(allow_none=True, validate=ma.validate.Range(1))


class AnthropicErrorBodySchema(ma.Schema):
    type = ma.fields.String(required=True)
    message = ma.fields.String(required=True)
    code = ma.fields.String(allow_none=True, metadata={"description": "Eonyx's name for it"})


class AnthropicErrorSchema(ma.Schema):
    """What every /v1/messages error answers: Anthropic's shape."""

    type = ma.fields.String(required=True, metadata={"description": "always error"})
    error = ma.fields.Nested(AnthropicErrorBodySchema, required=True)
