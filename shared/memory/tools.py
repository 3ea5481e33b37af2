"""The chat model's memory tools: `memory` (the user profile, USER.md) and `manage_memory`
(the agent memory about the work, MEMORY.md). The tools keep these names: session files
record the model's calls by name, and a resumed session's history must name tools that exist.

Entries are found by a unique substring; an ambiguous or missing one is refused with a result
that says so. `memory` reconciles instead of piling up: `replace` (or `add` with
`supersedes`) swaps a conflicting older preference for the newer one, and `consolidate`
rewrites the whole list. A `manage_memory` batch is all-or-nothing. Every write goes through
`MemoryStore.update` (filter, cap, backup, atomic replace, lock, version check). Each result
tells the model exactly what happened; after 3 refused writes in one turn the tools tell it
to stop trying and answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import redis

from shared.accounts.people import Principal
from shared.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from shared.core.events import MemoryUpdated
from shared.core.settings import Settings
from shared.infra import event_bus
from shared.llm.tools import Tool, ToolContext, ToolError, ToolRegistry
from shared.memory.describe import describe_write
from shared.memory.entry import CONTENT, ENTRY_ACTIONS, EntryWrite, WriteDone, write_schema
from shared.memory.files import (
    AGENT_MEMORY,
    FILE_NAMES,
    IDENTITY,
    USER_PROFILE,
    Kind,
    MemoryFile,
    MemoryRefused,
    MemoryStore,
    usage_line,
)

Compute = Callable[[list[str]], tuple[list[str], list[WriteDone]]]

MAX_REFUSALS = 3
STOP = "Stop trying to save memory in this turn and answer the user."

_USER_PROFILE_SCHEMA = write_schema(
    (*ENTRY_ACTIONS, "consolidate"),
    supersedes={
        "type": "string",
        "description": "add: a unique part of an older entry the new one contradicts; "
        "it is removed in the same write.",
    },
    entries={
        "type": "array",
        "items": CONTENT,
        "description": "consolidate: the whole new list of entries (merged, de-duplicated).",
    },
)
# The agent memory's tool says `modify` for replace: its calls are in session files by name.
_OPERATION = write_schema(("add", "remove", "modify"))
_AGENT_MEMORY_SCHEMA = write_schema(
    ("add", "remove", "modify", "batch"),
    operations={
        "type": "array",
        "items": _OPERATION,
        "description": "batch: applied in order, all or nothing.",
    },
)


def normalize(text: object, field: str) -> str:
    if not isinstance(text, str) or not " ".join(text.split()):
        raise MemoryRefused(f"{field} must be non-empty text")
    return " ".join(text.split())


def find_one(entries: list[str], needle: object) -> int:
    """The index of the one entry containing `needle` (case-insensitive)."""
    text = normalize(needle, "old_text").lower()
    matches = [i for i, entry in enumerate(entries) if text in entry.lower()]
    if not matches:
        raise MemoryRefused(f"no entry contains {text!r}; nothing was changed")
    if len(matches) > 1:
        listed = "; ".join(repr(entries[i]) for i in matches[:5])
        raise MemoryRefused(
            f"{len(matches)} entries contain {text!r} ({listed}); give a longer part of the "
            "one you mean; nothing was changed"
        )
    return matches[0]


def _check_new(entries: list[str], entry: str, ignore: int | None = None) -> None:
    for i, existing in enumerate(entries):
        if i != ignore and existing.casefold() == entry.casefold():
            raise MemoryRefused(f"{entry!r} is already saved; nothing was changed")


def apply_operation(entries: list[str], op: Mapping[str, object]) -> tuple[list[str], WriteDone]:
    """One add/replace/modify/remove/consolidate on a copy; returns (entries, what happened)."""
    entries = list(entries)
    action = op.get("action")
    if action == "add":
        entry = normalize(op.get("content"), "content")
        drop = find_one(entries, op["supersedes"]) if op.get("supersedes") else None
        _check_new(entries, entry, ignore=drop)
        if drop is None:
            entries.append(entry)
            return entries, {"action": "added", "entry": entry}
        previous = entries[drop]
        entries[drop] = entry
        return entries, {"action": "replaced", "entry": entry, "previous": previous}
    if action in ("replace", "modify"):
        index = find_one(entries, op.get("old_text"))
        entry = normalize(op.get("content"), "content")
        _check_new(entries, entry, ignore=index)
        previous, entries[index] = entries[index], entry
        return entries, {"action": "replaced", "entry": entry, "previous": previous}
    if action == "remove":
        index = find_one(entries, op.get("old_text"))
        return entries[:index] + entries[index + 1 :], {
            "action": "removed",
            "entry": entries[index],
        }
    if action == "consolidate":
        raw = op.get("entries")
        if not isinstance(raw, list) or not raw:
            raise MemoryRefused("consolidate needs the whole new list of entries")
        merged: list[str] = []
        for item in raw:
            entry = normalize(item, "entries[]")
            if entry.casefold() not in {e.casefold() for e in merged}:
                merged.append(entry)
        return merged, {"action": "consolidated", "entries": len(merged)}
    raise MemoryRefused(f"unknown action {action!r}")


def apply_batch(entries: list[str], ops: object) -> tuple[list[str], list[WriteDone]]:
    if not isinstance(ops, list) or not ops:
        raise MemoryRefused("batch needs a non-empty list of operations")
    done: list[WriteDone] = []
    for number, op in enumerate(ops, 1):
        if not isinstance(op, dict) or op.get("action") not in ("add", "remove", "modify"):
            raise MemoryRefused(f"operation {number} must be an add, remove or modify")
        try:
            entries, what = apply_operation(entries, op)
        except MemoryRefused as exc:
            message = f"operation {number}: {exc.message}; the batch was not saved"
            raise MemoryRefused(message) from None
        done.append(what)
    return entries, done


def apply_write(
    store: MemoryStore, user_id: str, kind: Kind, compute: Compute
) -> tuple[MemoryFile, list[WriteDone]]:
    """One automated write of entries (the model's tools, an outside agent's entry): through
    `MemoryStore.update` (filter, cap, backup, lock, version check); (the file after, what
    each step did). Refusals raise InvalidInput or Conflict with the reason."""
    done: list[WriteDone] = []

    def change(entries: list[str]) -> list[str]:
        new, steps = compute(entries)
        done.extend(steps)
        return new

    _, after = store.update(kind, user_id, change)
    return after, done


def saved_line(kind: Kind, after: MemoryFile, done: list[WriteDone]) -> str:
    """What a write did, in one sentence for a model."""
    file_name = FILE_NAMES[kind]
    summary = "; ".join(describe_write(file_name, what) for what in done)
    return f"Saved: {summary}. {file_name} is now {usage_line(after.chars, after.limit)}."


def run_memory_write(store: MemoryStore, context: ToolContext, kind: Kind, compute: Compute) -> str:
    """Do one write for the model and report it, counting refusals for the turn."""
    if context.refusals >= MAX_REFUSALS:
        raise ToolError(f"not attempted. {STOP}")
    try:
        after, done = apply_write(store, context.principal.user_id, kind, compute)
    except (InvalidInput, Conflict) as exc:  # refused, filtered, busy or changed meanwhile
        context.refusals += 1
        stop = f" {STOP}" if context.refusals >= MAX_REFUSALS else ""
        raise ToolError(f"not saved: {exc.message}.{stop}") from None
    for what in done:
        context.record(MemoryUpdated.written(FILE_NAMES[kind], what))
    return saved_line(kind, after, done)


def write_entry(
    store: MemoryStore,
    client: redis.Redis | None,
    settings: Settings,
    principal: Principal,
    kind: str,
    operation: EntryWrite,
) -> tuple[MemoryFile, str]:
    """One entry added, replaced or removed from outside a chat (an agent over MCP, a
    script): the same write as the chat's memory tools (`apply_write`), then `memory.updated`
    to the user's clients. The identity is not written here. Returns (the file after, the
    sentence saying what was saved); a refusal raises with its reason in one sentence."""
    file_kind = _entry_file(settings, kind)
    if operation.get("action") not in ENTRY_ACTIONS:
        raise MemoryRefused(f"action must be one of {', '.join(ENTRY_ACTIONS)}")

    def compute(entries: list[str]) -> tuple[list[str], list[WriteDone]]:
        new, what = apply_operation(entries, operation)
        return new, [what]

    after, done = apply_write(store, principal.user_id, file_kind, compute)
    for what in done:
        event_bus.publish(
            client, principal.user_id, MemoryUpdated.written(FILE_NAMES[file_kind], what)
        )
    return after, saved_line(file_kind, after, done)


def _entry_file(settings: Settings, kind: str) -> Kind:
    if kind == IDENTITY:
        raise Forbidden("the identity is read-only here; it is edited by administrators")
    if kind not in (USER_PROFILE, AGENT_MEMORY):
        raise NotFound(f"no memory {kind!r}; choose user or agent")
    if settings.demo_mode:
        raise Forbidden("memory is not saved on this server (demo mode)", code="memory_off")
    file_kind: Kind = USER_PROFILE if kind == USER_PROFILE else AGENT_MEMORY
    on = {USER_PROFILE: settings.user_profile_enabled, AGENT_MEMORY: settings.agent_memory_enabled}
    if not on[file_kind]:
        raise Forbidden(f"{FILE_NAMES[file_kind]} is turned off on this server", code="memory_off")
    return file_kind


def register_memory_tools(
    registry: ToolRegistry, store: MemoryStore, live: Callable[[], Settings]
) -> None:
    """The chat's memory tools, offered while their file is switched on (`live()`: the
    settings with an administrator's run-time switches, read at each turn)."""

    def user_profile_tool(context: ToolContext, args: Mapping[str, object]) -> str:
        def compute(entries: list[str]) -> tuple[list[str], list[WriteDone]]:
            new, what = apply_operation(entries, args)
            return new, [what]

        return run_memory_write(store, context, USER_PROFILE, compute)

    def agent_memory_tool(context: ToolContext, args: Mapping[str, object]) -> str:
        def compute(entries: list[str]) -> tuple[list[str], list[WriteDone]]:
            if args.get("action") == "batch":
                return apply_batch(entries, args.get("operations"))
            if args.get("action") not in ("add", "remove", "modify"):
                raise MemoryRefused("action must be add, remove, modify or batch")
            new, what = apply_operation(entries, args)
            return new, [what]

        return run_memory_write(store, context, AGENT_MEMORY, compute)

    def writable(context: ToolContext) -> bool:
        return not context.temporary and not live().demo_mode

    def profile_writable(context: ToolContext) -> bool:
        return writable(context) and live().user_profile_enabled

    def memory_writable(context: ToolContext) -> bool:
        return writable(context) and live().agent_memory_enabled

    # Both are registered; `available` says whether a turn offers them.
    registry.register(
        Tool(
            "memory",
            "Keep the user's preference profile (USER.md): how they like to be helped, "
            "their communication style, expectations and habits. One short entry per "
            "preference. When a new explicit preference contradicts an older one, replace "
            "it (action replace, or add with supersedes) so it stays one line. Never store "
            "secrets or sensitive personal data.",
            _USER_PROFILE_SCHEMA,
            user_profile_tool,
            available=profile_writable,
        )
    )
    registry.register(
        Tool(
            "manage_memory",
            "Keep your own notes about the user's work (MEMORY.md): durable, reusable facts "
            "about their environment and projects (conventions, commands, tool quirks, "
            "stable rules). One fact per entry; modify an entry that changed rather than "
            "adding a second one. A batch is applied all or nothing.",
            _AGENT_MEMORY_SCHEMA,
            agent_memory_tool,
            available=memory_writable,
        )
    )
