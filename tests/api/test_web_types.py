"""What the server pushes is what the OpenAPI document says, and what the clients are typed
with: every event class is sent as its component says, read back by the Python clients as
the same event, and the web client's events.d.ts is what the document gives today."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from api.docs import web_types
from api.docs.event_schemas import component_name
from shared.core import events, registry
from shared.core.events import (
    Done,
    ErrorBody,
    FunctionCall,
    LikeUpdated,
    MemoryUpdated,
    MemoryWrite,
    Ready,
    SessionStarted,
    SessionTitle,
    SessionUpdated,
    SocketError,
    Token,
    ToolCall,
    ToolResult,
    TurnError,
)

MESSAGE = {"id": "m1", "role": "tool", "tool_call_id": "c1", "name": "memory", "content": "ok"}
SAMPLES: list[events.Event] = [
    SessionTitle("20260705T091500-1a2b3c4d", "Trip to Lyon"),
    SessionTitle("20260705T091500-1a2b3c4d", None),
    SessionUpdated("20260705T091500-1a2b3c4d"),
    LikeUpdated("s", "u1", ["u1", "a1"], "saved", "1 change(s) to MEMORY.md", 1),
    LikeUpdated("s", "u1", ["u1"], None, None, None),
    MemoryUpdated.written("USER.md", {"action": "replaced", "entry": "b", "previous": "a"}),
    MemoryUpdated("USER.md", "reconciled", entries=3),
    Ready(),
    SocketError(ErrorBody("invalid_token", "sign in again")),
    SessionStarted("20260705T091500-1a2b3c4d"),
    Token("Hel"),
    ToolCall("a1", "c1", FunctionCall("memory", '{"action": "add"}')),
    ToolResult(MESSAGE),
    MemoryWrite(MemoryUpdated("MEMORY.md", "added", entry="uses uv").as_json()),
    Done({"session_id": "s", "steps": [MESSAGE], "memory_writes": []}),
    TurnError(ErrorBody("model_failed", "the model did not answer", {"retry": True}), 502),
]


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return web_types.openapi_document()


def _json_schema(schema: object) -> object:
    """OpenAPI 3.0's `nullable` as JSON Schema's null type, for jsonschema."""
    if isinstance(schema, Mapping):
        found = {key: _json_schema(value) for key, value in schema.items() if key != "nullable"}
        if schema.get("nullable") and "type" in found:
            found["type"] = [found["type"], "null"]
        return found
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    return schema


def test_every_event_class_has_a_sample() -> None:
    assert {type(event) for event in SAMPLES} == {*events.LIVE_EVENTS, *events.STREAM_EVENTS}


@pytest.mark.parametrize("event", SAMPLES, ids=repr)
def test_an_event_is_sent_as_its_component_says(document: dict[str, Any], event: Any) -> None:
    root = _json_schema({"components": document["components"]})
    name = component_name(type(event).__name__)
    assert isinstance(root, dict)
    jsonschema.validate(event.as_json(), {**root, "$ref": f"#/components/schemas/{name}"})
    if isinstance(event, events.LiveEvent):
        jsonschema.validate(event.as_json(), {**root, "$ref": "#/components/schemas/LiveEvent"})


@pytest.mark.parametrize("event", SAMPLES, ids=repr)
def test_the_python_clients_read_back_the_event_sent(event: Any) -> None:
    if isinstance(event, events.LiveEvent):
        assert events.parse_live(event.as_json()) == event
    else:
        assert events.parse_stream(event.NAME, event.as_json()) == event


def test_an_unknown_or_malformed_event_reads_as_none() -> None:
    assert events.parse_live({"type": "ping"}) is None
    assert events.parse_live({"type": registry.EVENT_SESSION_UPDATED}) is None
    assert events.parse_stream("token", {}) is None
    assert events.parse_stream("thinking", {"text": "hm"}) is None


def test_the_document_names_every_live_event_type(document: dict[str, Any]) -> None:
    mapping = document["components"]["schemas"]["LiveEvent"]["discriminator"]["mapping"]
    types = {value for name, value in vars(registry).items() if name.startswith("EVENT_")}
    assert set(mapping) == types
    streamed = document["components"]["schemas"]["TurnStreamEvents"]["properties"]
    assert set(streamed) == {cls.NAME for cls in events.STREAM_EVENTS}


def test_the_web_clients_event_types_are_generated_from_the_document(
    document: dict[str, Any],
) -> None:
    """Run `make web-types` when this fails: events.d.ts is written from the document."""
    assert web_types.OUTPUT.read_text() == web_types.declarations(document)
