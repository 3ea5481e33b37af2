"""The live events and a streamed turn's events as JSON Schema components of the OpenAPI
document, read off the classes of shared/core/events.py so that the document, the server and
the clients cannot drift apart (the web client's types are generated from these components:
api/docs/web_types.py).

Each event class is a component named after it with `Event` after (`SessionTitleEvent`), a
class nested in one with `Event` before (`EventErrorBody`): the API's other components keep
their names (`Token`, `ErrorBody`). `LiveEvent` is the union of the live events
(told apart by `type`), `TurnStreamEvents` maps each server-sent event name of a streamed turn
to its data. A field `Annotated[..., Ref(name)]` is a `$ref` to a component the API already
has (`Message`, `TurnResult`); a field left out when None is not required, one sent as null is
`nullable` (OpenAPI 3.0).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Literal, Union

from apispec import APISpec

from shared.core import events

Schema = dict[str, object]
REF = "#/components/schemas/"
SCALARS: Mapping[object, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


EVENT_CLASSES = {cls.__name__: cls for cls in (*events.LIVE_EVENTS, *events.STREAM_EVENTS)}


def component_name(name: str) -> str:
    """The component of the class `name` of shared/core/events.py (or another component)."""
    if name in EVENT_CLASSES:
        return name + "Event"
    return "Event" + name if hasattr(events, name) else name


def _is_optional(hint: object) -> tuple[bool, object]:
    """(whether None is allowed, the hint without None)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(rest) < len(typing.get_args(hint)):
            return True, rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
    return False, hint


def type_schema(hint: object, found: dict[str, type]) -> Schema:
    """The JSON Schema of a field's type; dataclasses met on the way go into `found`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        refs = [arg for arg in args[1:] if isinstance(arg, events.Ref)]
        if refs:
            return {"$ref": REF + component_name(refs[0].component)}
        return type_schema(args[0], found)
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": type_schema(args[0], found)}
    if hint in SCALARS:
        return {"type": SCALARS[hint]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        found[hint.__name__] = hint
        return {"$ref": REF + component_name(hint.__name__)}
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        return {"type": "object", "additionalProperties": {}}
    raise TypeError(f"no JSON Schema for {hint!r}")


def class_schema(cls: type, found: dict[str, type]) -> Schema:
    """The JSON Schema of the JSON an event class (or a class nested in one) is sent as."""
    hints = typing.get_type_hints(cls, include_extras=True)
    items = dataclasses.fields(cls)
    whole = [item for item in items if item.metadata.get("whole")]
    if whole:
        return {"allOf": [type_schema(hints[whole[0].name], found)], "description": _doc(cls)}
    properties: dict[str, Schema] = {}
    required: list[str] = []
    if issubclass(cls, events.LiveEvent):
        properties["type"] = {"type": "string", "enum": [cls.TYPE]}
        required.append("type")
    for item in items:
        optional, hint = _is_optional(hints[item.name])
        schema = type_schema(hint, found)
        if item.metadata.get("omitted"):
            properties[item.name] = schema
            continue
        properties[item.name] = {**schema, "nullable": True} if optional else schema
        required.append(item.name)
    shape: Schema = {"type": "object", "properties": properties, "required": required}
    return {**shape, "description": _doc(cls)} if cls.__doc__ else shape


def _doc(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split())


def event_components() -> dict[str, Schema]:
    """Every component: the event classes, the classes they nest, and the two maps."""
    found: dict[str, type] = {}
    classes = {cls.__name__: class_schema(cls, found) for cls in EVENT_CLASSES.values()}
    while set(found) - set(classes):
        for name in sorted(set(found) - set(classes)):
            classes[name] = class_schema(found[name], found)
    components = {component_name(name): schema for name, schema in classes.items()}
    live = {cls.TYPE: REF + component_name(cls.__name__) for cls in events.LIVE_EVENTS}
    components["LiveEvent"] = {
        "description": "What the events socket (GET /api/v1/events) sends: one of these.",
        "oneOf": [{"$ref": ref} for ref in live.values()],
        "discriminator": {"propertyName": "type", "mapping": live},
    }
    components["TurnStreamEvents"] = {
        "description": "A streamed turn's server-sent events: each event's name and its data.",
        "type": "object",
        "properties": {
            cls.NAME: {"$ref": REF + component_name(cls.__name__)} for cls in events.STREAM_EVENTS
        },
        "required": [cls.NAME for cls in events.STREAM_EVENTS],
    }
    return components


def register_event_schemas(spec: APISpec) -> None:
    for name, schema in event_components().items():
        spec.components.schema(name, component=dict(schema))
