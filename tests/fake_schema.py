"""JSON instances of a JSON Schema, for the fake model's tool arguments and structured answers.

    instance(schema, hints={"city": "Paris"})   # {"city": "Paris", "days": 1}
    hints_in("use get_weather city=Paris days: 3")  # {"city": "Paris", "days": "3"}

`instance` covers what client libraries send (pydantic's `model_json_schema`, OpenAI strict
schemas): objects with all their properties, scalars, enum/const, arrays of one item (or
`minItems`), tuples (`prefixItems`), anyOf/oneOf (the first option that is not null), allOf,
`$ref` into `$defs`/`definitions`, defaults, and string formats. A hint names a property at
any depth and wins over the default, coerced to the property's type (an enum keeps to its
values). Not a validator: `pattern` and `multipleOf` are not honoured.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05",
    "duration": "PT1H",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
}
_DEEP = 6  # past this depth, optional structure is left out (recursive models end)
_HINT = re.compile(r"""\b([A-Za-z_][\w-]*)\s*[=:]\s*("[^"]*"|'[^']*'|[^\s,;]+)""")


def hints_in(text: str) -> dict[str, str]:
    """`name=value` and `name: value` pairs in a message (quotes keep spaces in a value)."""
    found: dict[str, str] = {}
    for name, value in _HINT.findall(text):
        if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
            value = value[1:-1]
        else:
            value = value.rstrip(".!?)")
        found.setdefault(name, value)
    return found


def instance(schema: Any, hints: dict[str, str] | None = None) -> Any:
    """A value that the schema accepts, with hinted property values where they fit."""
    return _Maker(schema if isinstance(schema, dict) else {}, hints or {}).make(schema, None, 0)


class _Maker:
    def __init__(self, root: dict[str, Any], hints: dict[str, str]) -> None:
        self.root = root
        self.hints = hints

    def resolve(self, schema: Any) -> dict[str, Any]:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 50:
            target: Any = self.root
            for part in str(schema["$ref"]).lstrip("#").strip("/").split("/"):
                if part:
                    target = target[part.replace("~1", "/").replace("~0", "~")]
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **extra}
            seen += 1
        if isinstance(schema, dict) and schema.get("allOf"):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part)
                props = {**merged.get("properties", {}), **part.get("properties", {})}
                merged = {**part, **merged, "properties": props}
                merged["required"] = list({*merged.get("required", []), *part.get("required", [])})
            return merged
        return schema if isinstance(schema, dict) else {}

    def make(self, schema: Any, name: str | None, depth: int) -> Any:
        schema = self.resolve(schema)
        hint = self.hints.get(name) if name else None
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return _pick_enum(schema["enum"], hint)
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            return self.make(_first_option(self, options, hint, depth), name, depth)
        kind = _kind(schema)
        if hint is not None and kind not in ("object",):
            coerced = _coerce(hint, kind, schema)
            if coerced is not _NO:
                return coerced
        if "default" in schema:
            return schema["default"]
        if "examples" in schema and isinstance(schema["examples"], list) and schema["examples"]:
            return schema["examples"][0]
        if kind == "object":
            return self.object(schema, depth)
        if kind == "array":
            return self.array(schema, name, depth)
        return _scalar(kind, schema, name)

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        keep = (
            properties if depth < _DEEP else {k: v for k, v in properties.items() if k in required}
        )
        return {key: self.make(sub, key, depth + 1) for key, sub in keep.items()}

    def array(self, schema: dict[str, Any], name: str | None, depth: int) -> list[Any]:
        if schema.get("prefixItems"):
            return [self.make(item, name, depth + 1) for item in schema["prefixItems"]]
        count = max(int(schema.get("minItems") or 0), 1 if depth < _DEEP else 0)
        return [self.make(schema.get("items") or {}, name, depth + 1) for _ in range(count)]


class _Missing:
    pass


_NO: Any = _Missing()


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind:
        return str(kind)
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _first_option(maker: _Maker, options: list[Any], hint: str | None, depth: int) -> Any:
    resolved = [maker.resolve(option) for option in options]
    not_null = [o for o in resolved if _kind(o) != "null"] or resolved
    if depth >= _DEEP and len(not_null) < len(resolved):
        return {"type": "null"}
    if hint is not None:
        for option in not_null:
            if "enum" in option and hint in option["enum"]:
                return option
            if "enum" not in option and _coerce(hint, _kind(option), option) is not _NO:
                return option
    return not_null[0]


def _pick_enum(values: list[Any], hint: str | None) -> Any:
    if hint is not None:
        for value in values:
            if str(value) == hint or str(value).lower() == hint.lower():
                return value
    return values[0] if values else None


def _coerce(value: str, kind: str, schema: dict[str, Any]) -> Any:
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            number = float(value)
            return int(number) if number.is_integer() and "." not in value else number
        if kind == "boolean":
            if value.lower() in ("true", "yes", "1", "on"):
                return True
            if value.lower() in ("false", "no", "0", "off"):
                return False
            return _NO
        if kind == "null":
            return None if value.lower() in ("null", "none") else _NO
        if kind == "array":
            parsed = json.loads(value) if value.startswith("[") else value.split("|")
            return parsed if isinstance(parsed, list) else _NO
        if kind == "string":
            return value
    except ValueError:
        return _NO
    return _NO


def _scalar(kind: str, schema: dict[str, Any], name: str | None) -> Any:
    if kind == "integer":
        return _bounded(1, schema, integer=True)
    if kind == "number":
        return float(_bounded(1, schema, integer=False))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if schema.get("format") in _FORMATS:
        return _FORMATS[schema["format"]]
    value = name or "text"
    minimum = int(schema.get("minLength") or 0)
    maximum = schema.get("maxLength")
    value = (value * (minimum // max(len(value), 1) + 1)) if len(value) < minimum else value
    return value[: int(maximum)] if maximum is not None else value


def _bounded(value: float, schema: dict[str, Any], *, integer: bool) -> float:
    step = 1 if integer else 0.5
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        value = schema["exclusiveMinimum"] + step
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        value = schema["exclusiveMaximum"] - step
    return int(value) if integer else value
