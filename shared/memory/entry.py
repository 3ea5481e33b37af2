"""The write contract of one memory entry, written once: what the chat model's memory tools
(shared/memory/tools.py), the MCP tools of `eonyx mcp` (cli/mcp_server.py) and the API's
`POST /memory/<kind>/entries` (api/memory/views.py) accept. One entry is added, replaced or
removed in USER.md (`user`) or MEMORY.md (`agent`); the text of an entry, and the part of an
old one that finds it, are 1 to ENTRY_MAX_CHARS characters (the file's own cap is checked when
it is written).

The JSON Schemas here are the ones the model and an MCP agent are shown; the API's
marshmallow schema takes its actions, limits, descriptions and needs from the same names.
Imports nothing of the server, so `eonyx mcp` can use it without loading the server's stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypedDict

EntryAction = Literal["add", "replace", "remove"]
EntryKind = Literal["user", "agent"]
ENTRY_ACTIONS: tuple[EntryAction, ...] = ("add", "replace", "remove")
ENTRY_KINDS: tuple[EntryKind, ...] = ("user", "agent")
ENTRY_MAX_CHARS = 10_000

# What each action needs besides itself, in the order an agent gives them.
NEEDS: Mapping[str, tuple[str, ...]] = {
    "add": ("content",),
    "replace": ("old_text", "content"),
    "remove": ("old_text",),
}


class EntryWrite(TypedDict):
    """One entry written from outside a chat (the API's body, an MCP call's arguments)."""

    action: EntryAction
    content: NotRequired[str]
    old_text: NotRequired[str]


class WriteDone(TypedDict):
    """What one write step did: for the model's tool result, `memory.updated`, a like."""

    action: Literal["added", "replaced", "removed", "consolidated"]
    entry: NotRequired[str]
    previous: NotRequired[str]  # replaced: the entry it took the place of
    entries: NotRequired[int]  # consolidated: how many entries the file now holds


CONTENT: Mapping[str, object] = {
    "type": "string",
    "minLength": 1,
    "maxLength": ENTRY_MAX_CHARS,
    "description": "The entry to save: one short, self-contained fact or preference.",
}
OLD_TEXT: Mapping[str, object] = {
    "type": "string",
    "minLength": 1,
    "maxLength": ENTRY_MAX_CHARS,
    "description": "A unique part of the existing entry meant (its exact words, case-insensitive).",
}
KIND: Mapping[str, object] = {
    "type": "string",
    "enum": list(ENTRY_KINDS),
    "description": "user: USER.md, the user's preferences and how they like to be helped; "
    "agent: MEMORY.md, facts about their work (projects, conventions, commands).",
}
FIELDS: Mapping[str, Mapping[str, object]] = {"content": CONTENT, "old_text": OLD_TEXT}


def write_schema(
    actions: tuple[str, ...] = ENTRY_ACTIONS, **more: Mapping[str, object]
) -> dict[str, object]:
    """The JSON Schema of one write: an `action` among `actions`, the entry's fields, and the
    `more` properties a caller adds (the model's `supersedes`, a batch's `operations`)."""
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(actions)},
            **FIELDS,
            **more,
        },
        "required": ["action"],
    }


def action_schema(action: EntryAction, **more: Mapping[str, object]) -> dict[str, object]:
    """The JSON Schema of one action's arguments alone (an MCP tool per action): the fields it
    needs, all required, and the `more` a caller adds first (the MCP tools' `kind`)."""
    return {
        "type": "object",
        "properties": {**more, **{name: FIELDS[name] for name in NEEDS[action]}},
        "required": [*more, *NEEDS[action]],
    }


ENTRY_WRITE_SCHEMA = write_schema()
