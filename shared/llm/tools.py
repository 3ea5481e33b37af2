"""The tool registry of the chat model: what tools it is offered and how a call is run.

A tool is a name, a description, a JSON-schema for its arguments and a handler. Handlers get
a `ToolContext` (who is calling, in which session) and the parsed arguments, and return the
text the model reads as the tool's result. A handler signals a refused or failed call by
raising `ToolError`; its message goes back to the model, which decides what to do next.
Later features (memory) register their tools here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from shared.accounts.people import Principal
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.events import LiveEvent

log = logging.getLogger(__name__)


class ToolError(Exception):
    """A tool call that could not be done; the message is shown to the model."""


@dataclass
class ToolContext:
    principal: Principal
    session_id: str
    temporary: bool = False
    events: list[dict[str, object]] = field(default_factory=list)  # their JSON, for the turn
    refusals: int = 0
    notify: Callable[[LiveEvent], None] = lambda _event: None  # push one live event

    def record(self, event: LiveEvent) -> None:
        """Keep an event for the turn's response and push it to the user's clients now."""
        self.events.append(event.as_json())
        self.notify(event)


# The arguments are the model's JSON object, unchecked: a handler reads what it needs.
Handler = Callable[[ToolContext, Mapping[str, object]], str]


class FunctionSpec(TypedDict):
    name: str
    description: str
    parameters: Mapping[str, object]  # a JSON Schema


class ToolSpec(TypedDict):
    """A tool as chat completions' `tools` list names it."""

    type: Literal["function"]
    function: FunctionSpec


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, object]  # a JSON Schema
    handler: Handler
    available: Callable[[ToolContext], bool] = lambda _context: True

    def spec(self) -> ToolSpec:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._tools)

    def specs(self, context: ToolContext) -> list[dict[str, object]]:
        """The tools offered in this context (a temporary chat gets no memory tools), as
        copies the turn may send beside a client's own tools."""
        return [dict(tool.spec()) for tool in self._tools.values() if tool.available(context)]

    def run(self, context: ToolContext, name: str, arguments: str) -> str:
        """Run one call and return the text for the model; never raises for the model's
        mistakes (unknown tool, bad JSON, refused call): those are results too."""
        tool = self._tools.get(name)
        if tool is None or not tool.available(context):
            return f"error: there is no tool named {name!r}"
        try:
            parsed = decode_json(arguments or "{}", what="the arguments text")
        except InvalidJSON as exc:
            return f"error: {exc.message}"
        if not isinstance(parsed, dict):
            return "error: the arguments must be a JSON object"
        try:
            return tool.handler(context, parsed)
        except ToolError as exc:
            return f"error: {exc}"
