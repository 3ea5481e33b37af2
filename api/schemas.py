"""Schema building blocks shared by the resource schemas.

Every string a client sends goes through `Text` (multi-line: messages, prompts, memory files)
or `Line` (one line: titles, names, usernames, ids, search terms), which hold it to the rule
of shared/core/text.py: no control characters but tab and line breaks (none at all in one
line), no bidirectional controls, no lone surrogates. The OpenAPI document states the rule
as each field's `pattern`, or the field's own stricter pattern (an id's shape).
"""

from __future__ import annotations

import re
from typing import Any

import marshmallow as ma

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
