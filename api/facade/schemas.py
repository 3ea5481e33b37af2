"""Request bodies of the OpenAI-compatible facade: what Eonyx reads, ignoring the rest of what
OpenAI clients send (temperature, user, ...)."""

from __future__ import annotations

import marshmallow as ma


class CompletionRequestSchema(ma.Schema):
    class Meta:
        unknown = ma.EXCLUDE

    model = ma.fields.String(
        required=True, metadata={"description": "an offering id (GET /v1/models)"}
    )
    messages = ma.fields.List(ma.fields.Raw(), required=True)
    stream = ma.fields.Boolean(load_default=False)


class OpenAIErrorBodySchema(ma.Schema):
    message = ma.fields.String(required=True)
    type = ma.fields.String(required=True)
    param = ma.fields.String(allow_none=True, required=True)
    code = ma.fields.String(allow_none=True, required=True)


class OpenAIErrorSchema(ma.Schema):
    """What every facade error answers: OpenAI's shape, so OpenAI clients can read it."""

    error = ma.fields.Nested(OpenAIErrorBodySchema, required=True)
