"""One memory-entry contract (shared/memory/entry.py): the API, the MCP tools and the chat
model's memory tools state the same actions, fields and limits."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from cli.mcp_server import TOOLS
from shared.core.settings import Settings
from shared.llm.tools import ToolRegistry
from shared.memory import entry
from shared.memory.tools import register_memory_tools

API = "/api/v1"


def test_the_api_documents_the_contracts_actions_and_limits(client: FlaskClient) -> None:
    spec: dict[str, Any] = client.get(f"{API}/openapi.json").get_json()
    fields = spec["components"]["schemas"]["EntryWrite"]["properties"]
    assert fields["action"]["enum"] == list(entry.ENTRY_ACTIONS)
    for name, contract in entry.FIELDS.items():
        assert fields[name]["minLength"] == contract["minLength"]
        assert fields[name]["maxLength"] == contract["maxLength"]
        assert fields[name]["description"] == contract["description"]


def test_the_mcp_tools_take_the_contracts_schema_per_action() -> None:
    for action in entry.ENTRY_ACTIONS:
        schema = TOOLS[f"memory_{action}"].schema
        assert schema == entry.action_schema(action, kind=entry.KIND)
        assert schema["required"] == ["kind", *entry.NEEDS[action]]


def test_the_models_memory_tools_take_the_contracts_fields() -> None:
    tools = ToolRegistry()
    register_memory_tools(tools, store=None, live=Settings)  # type: ignore[arg-type]
    for tool in tools._tools.values():
        properties: Any = tool.parameters["properties"]
        assert properties["content"] == entry.CONTENT
        assert properties["old_text"] == entry.OLD_TEXT
