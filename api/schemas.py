"""Schema building blocks shared by the resource schemas."""

from __future__ import annotations

import marshmallow as ma


class StrictSchema(ma.Schema):
    """Request bodies: unknown fields are an error, not silently dropped."""

    class Meta:
        unknown = ma.RAISE


class PageArgsSchema(StrictSchema):
    limit = ma.fields.Integer(load_default=50, validate=ma.validate.Range(min=1, max=200))
    cursor = ma.fields.String(load_default=None, validate=ma.validate.Length(max=512))
