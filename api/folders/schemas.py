from __future__ import annotations

import marshmallow as ma

from api.schemas import Flag, Line, Schema, StrictSchema
from shared.sessions.folders import NAME_MAX, PALETTE, SECTIONS

COLOR = ma.validate.OneOf(list(PALETTE), error="color must be one of the palette: {choices}")
NAME = ma.validate.Length(min=1, max=NAME_MAX)


class FolderSchema(Schema):
    id = ma.fields.String()
    name = ma.fields.String()
    color = ma.fields.String(metadata={"description": "a palette name"})
    position = ma.fields.Integer(metadata={"description": "0 for the first folder"})
    created_at = ma.fields.AwareDateTime()
    updated_at = ma.fields.AwareDateTime()


class ColorSchema(Schema):
    name = ma.fields.String()
    hex = ma.fields.String()


class FolderListSchema(Schema):
    items = ma.fields.List(ma.fields.Nested(FolderSchema))
    palette = ma.fields.List(ma.fields.Nested(ColorSchema))


class NewFolderSchema(StrictSchema):
    name = Line(required=True, validate=NAME)
    color = Line(load_default=None, validate=COLOR)


class FolderPatchSchema(StrictSchema):
    name = Line(validate=NAME)
    color = Line(validate=COLOR)


class FolderOrderSchema(StrictSchema):
    ids = ma.fields.List(
        Line(validate=ma.validate.Length(max=32)),
        required=True,
        validate=ma.validate.Length(max=1000),
        metadata={"description": "folder ids, first to last; folders not named follow"},
    )


class UiStateSchema(Schema):
    device_id = ma.fields.String()
    sections_collapsed = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.Boolean(),
        metadata={"description": "the Folders and Chats sections; both start expanded"},
    )
    folders_collapsed = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.Boolean(),
        metadata={"description": "folder id -> collapsed; folders start collapsed"},
    )


class UiStatePutSchema(StrictSchema):
    sections_collapsed = ma.fields.Dict(
        keys=Line(validate=ma.validate.OneOf(SECTIONS)),
        values=Flag(),
        load_default=dict,
    )
    folders_collapsed = ma.fields.Dict(
        keys=Line(validate=ma.validate.Length(max=32)),
        values=Flag(),
        load_default=dict,
        validate=ma.validate.Length(max=1000),
    )
