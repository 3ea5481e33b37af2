"""Schema building blocks shared by the resource schemas.

Every string a client sends goes through `Text` (multi-line: messages, prompts, memory files)
or `Line` (one line: titles, names, usernames, ids, search terms), which hold it to the rule
of shared/core/text.py: no control characters but tab and line breaks (none at all in one
line), no bidirectional controls, no lone surrogates. The OpenAPI document states the rule
as each field's `pattern`, or the field's own stricter pattern (an id's shape).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import marshmallow as ma
from marshmallow.utils import get_value

from shared.core import text

Length = ma.validate.Length


class _Rule(ma.validate.Regexp):
    """The text rule, then the field's own shape when it has one. A Regexp, so apispec
    documents its `regex` as the field's pattern: the shape, or else the rule itself."""

    def __init__(self, single_line: bool, pattern: str | None, pattern_error: str | None) -> None:
        rule = text.SINGLE_LINE_PATTERN if single_line else text.MULTI_LINE_PATTERN
        super().__init__(pattern or rule, error=pattern_error or "does not have the right form")
        self.single_line = single_line
        self.shape = re.compile(pattern) if pattern is not None else None

    def __call__(self, value: str) -> str:  # type: ignore[override]
        found = text.problem(value, single_line=self.single_line)
        if found is not None:
            raise ma.ValidationError(found)
        if self.shape is not None and self.shape.fullmatch(value) is None:
            raise ma.ValidationError(self.error)
        return value


class Text(ma.fields.String):
    """A multi-line string from a client, held to the text rule. `pattern` is a stricter
    shape (an id's); its character class must leave out what the rule refuses."""

    single_line = False

    def __init__(
        self, *, pattern: str | None = None, pattern_error: str | None = None, **kwargs: Any
    ) -> None:
        given = kwargs.pop("validate", None)
        validators: list[Any] = [_Rule(self.single_line, pattern, pattern_error)]
        validators += list(given) if isinstance(given, (list, tuple)) else [given] if given else []
        super().__init__(validate=validators, **kwargs)


class Line(Text):
    """A one-line string from a client: no tab or line break either."""

    single_line = True


def IdList(*, most: int, description: str) -> ma.fields.List:
    """A required list of ids (users', groups'), at most `most` of them: one shape for every
    request that names a set of things by id."""
    return ma.fields.List(
        Line(validate=ma.validate.Length(min=1, max=64)),
        required=True,
        validate=ma.validate.Length(max=most),
        metadata={"description": description},
    )


class Flag(ma.fields.Boolean):
    """A JSON boolean: `true` or `false`, not 0, 1 or "yes" (what the document says)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class Int(ma.fields.Integer):
    """A JSON integer: not a string of digits, not 2.0, not `true`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return super()._deserialize(value, attr, data, **kwargs)


class QueryFlag(ma.fields.Boolean):
    """A boolean query argument: `true` or `false`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(truthy={"true"}, falsy={"false"}, **kwargs)


class _Formatted:
    """No value has this type: a field planned with it formats every value it writes."""


def _kept_type(field: ma.fields.Field) -> type | None:
    """The type of value this field writes as it is given (None: every value, as a field
    that keeps marshmallow's base `_serialize` does), read off the field's class."""
    kind = type(field)
    if kind._serialize is ma.fields.Field._serialize:
        return None
    if kind._serialize is ma.fields.String._serialize:
        return str
    if isinstance(field, ma.fields.Number):
        plain = (
            kind._serialize is ma.fields.Number._serialize
            and type(field)._format_num is ma.fields.Number._format_num
            and not field.as_string
        )
        if plain and field.num_type in (int, float):
            return field.num_type
    return _Formatted


class Schema(ma.Schema):
    """A response schema: marshmallow's dump, with each field's value read straight off the
    object. The result is marshmallow's own (the same keys, the field's formatting, dump
    defaults, missing attributes left out), without the three calls per field of its generic
    path; a page of 50 listed sessions (17 fields each) dumps three times faster. A field
    that reads through a method or a dotted attribute takes that path."""

    def _serialize(self, obj: Any, *, many: bool = False) -> Any:
        if many and obj is not None:
            return [self._serialize(item) for item in obj]
        keyed = hasattr(obj, "__getitem__")
        result = self.dict_class()
        missing = ma.missing
        for key, attr, field, kept, direct in self._plan:
            if not direct:
                value = field.serialize(attr, obj, accessor=self.get_attribute)
                if value is not missing:
                    result[key] = value
                continue
            value = get_value(obj, attr, missing) if keyed else getattr(obj, attr, missing)
            if value is missing:
                default = field.dump_default
                value = default() if callable(default) else default
                if value is missing:
                    continue
            if kept is not None and type(value) is not kept:
                value = field._serialize(value, attr, obj)
            result[key] = value
        return result

    @functools.cached_property
    def _plan(self) -> list[tuple[str, str, ma.fields.Field, type | None, bool]]:
        """Per dumped field: its key, the attribute it reads, the field, the type it writes
        unchanged, and whether its value can be read directly."""
        plan = []
        own_accessor = type(self).get_attribute is ma.Schema.get_attribute
        for name, field in self.dump_fields.items():
            attr = field.attribute if field.attribute is not None else name
            direct = (
                own_accessor
                and field._CHECK_ATTRIBUTE
                and type(field).serialize is ma.fields.Field.serialize
                and type(field).get_value is ma.fields.Field.get_value
                and "." not in attr
            )
            key = field.data_key if field.data_key is not None else name
            plan.append((key, attr, field, _kept_type(field), direct))
        return plan


class StrictSchema(ma.Schema):
    """Request bodies and arguments: unknown fields are an error, not silently dropped."""

    class Meta:
        unknown = ma.RAISE


CURSOR_PATTERN = r"^[A-Za-z0-9_-]*$"


class PageArgsSchema(StrictSchema):
    limit = ma.fields.Integer(load_default=50, validate=ma.validate.Range(min=1, max=200))
    cursor = Line(
        load_default=None,
        validate=Length(max=512),
        pattern=CURSOR_PATTERN,
        pattern_error="not a cursor this server gave out",
        metadata={"description": "`next_cursor` of the previous page"},
    )
