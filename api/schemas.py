"""Schema building blocks shared by the resource schemas.

Every string a client sends goes through `Text` (multi-line: messages, prompts, memory files)
or `Line` (one line: titles, names, usernames, ids, search terms), which hold it to the rule
of shared/core/text.py: no control characters but tab and line breaks (none at all in one
line), no bidirectional controls, no lone surrogates. The OpenAPI document states the rule
as each field's `pattern`, or the field's own stricter pattern (an id's shape).
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma

from shared.core import text

Length = ma.validate.Length


class _Rule(ma.validate.Validator):
    """The text rule as a marshmallow validator: the error says which character and where."""

    def __init__(self, single_line: bool) -> None:
        self.single_line = single_line

    def __call__(self, value: str) -> str:
        found = text.problem(value, single_line=self.single_line)
        if found is not None:
            raise ma.ValidationError(found)
        return value


class Text(ma.fields.String):
    """A multi-line string from a client, held to the text rule."""

    single_line = False

    def __init__(
        self, *, pattern: str | None = None, pattern_error: str | None = None, **kwargs: Any
    ) -> None:
        given = kwargs.pop("validate", None)
        validators: list[Any] = [_Rule(self.single_line)]
        validators += list(given) if isinstance(given, (list, tuple)) else [given] if given else []
        metadata = dict(kwargs.pop("metadata", None) or {})
        if pattern is not None:
            # A stricter shape (its class must exclude what the rule refuses): documented as
            # the field's pattern by apispec, which reads the Regexp validator.
            validators.append(ma.validate.Regexp(pattern, error=pattern_error or "bad format"))
        else:
            rule = text.SINGLE_LINE_PATTERN if self.single_line else text.MULTI_LINE_PATTERN
            metadata.setdefault("pattern", rule)
        super().__init__(validate=validators, metadata=metadata, **kwargs)


class Line(Text):
    """A one-line string from a client: no tab or line break either."""

    single_line = True


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
