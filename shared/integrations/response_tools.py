"""A Responses request's tools in Chat Completions form, for a model that runs functions only.

Function tools pass as they are. A `namespace` tool (Codex sends its MCP servers' tools so,
e.g. `mcp__eonyx`) is flattened: each of its function tools reaches the model as
`<namespace>__<name>`, Codex's own full name for an MCP tool, and a call of it comes back
with its namespace put back (`restore`), which Codex needs to route the call; a
`tool_choice` may name such a tool with its namespace, or by its own name alone when one
namespace has it (`chosen`). Hosted tools
(`web_search`, `file_search`, `code_interpreter`, ...) cannot run on the upstream model:
they are dropped for it and named as ignored (`tools[web_search]`), not refused (issue 41).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEPARATOR = "__"
FUNCTION_KEYS = ("name", "description", "parameters", "strict")


def flat_name(namespace: str | None, name: Any) -> Any:
    """The name the model knows a tool by: its namespace's prefix, when it has one."""
    return f"{namespace}{SEPARATOR}{name}" if namespace else name


@dataclass
class ResponseTools:
    """The tools for the model, where each flattened name came from, and what was dropped."""

    chat: list[dict[str, Any]] = field(default_factory=list)
    namespaces: dict[str, tuple[str, str]] = field(default_factory=dict)  # flat -> (ns, name)
    ignored: list[str] = field(default_factory=list)

    def add(self, tool: Mapping[str, Any], namespace: str | None = None) -> None:
        function = {k: tool[k] for k in FUNCTION_KEYS if k in tool}
        if namespace and isinstance(tool.get("name"), str):
            function["name"] = flat_name(namespace, tool["name"])
            self.namespaces[function["name"]] = (namespace, tool["name"])
        self.chat.append({"type": "function", "function": function})

    def chosen(self, namespace: Any, name: Any) -> Any:
        """The model's name for the tool a `tool_choice` names: flattened with its namespace;
        without one, a plain function's name as it is, else the one namespaced tool of that
        own name (a client that names `memory_read` means `mcp__eonyx`'s). A name matching
        nothing is left for the chat reading to refuse."""
        if namespace:
            return flat_name(namespace, name)
        if any(tool["function"].get("name") == name for tool in self.chat):
            return name
        found = [flat for flat, (_, own) in self.namespaces.items() if own == name]
        return found[0] if len(found) == 1 else name


def read_tools(tools: Any) -> ResponseTools:
    """The request's tools (not a list: the chat reading refuses it by name)."""
    read = ResponseTools()
    for tool in tools if isinstance(tools, list) else ():
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind == "namespace" and isinstance(tool.get("name"), str):
            for inner in tool.get("tools") or ():
                if isinstance(inner, Mapping) and inner.get("type", "function") == "function":
                    read.add(inner, tool["name"])
                else:
                    read.ignored.append(f"tools[{tool['name']}.{_kind(inner)}]")
        elif kind == "function" or not isinstance(kind, str):
            read.add(tool if isinstance(tool, Mapping) else {})
        else:
            read.ignored.append(f"tools[{kind}]")
    return read


def _kind(tool: Any) -> str:
    return str(tool.get("type")) if isinstance(tool, Mapping) else "?"


def restore(output: list[dict[str, Any]], namespaces: Mapping[str, tuple[str, str]]) -> None:
    """Put each flattened call's namespace and own name back on the response's output."""
    for item in output:
        origin = namespaces.get(item.get("name") or "") if item["type"] == "function_call" else None
        if origin is not None:
            item["namespace"], item["name"] = origin
