"""The memory panel: read IDENTITY.md, USER.md and MEMORY.md; edit them (the identity: admins),
with backups.

An edit here is the operator's: saved exactly as written, refused only over the limit, with a
timestamped backup of the previous file first. A PUT that sends back the `version` it read is
refused (409 `stale_version`) when the file changed meanwhile. An edit applies from the next
session (the identity from the next restart); running sessions keep their snapshot. Who may
touch which file is decided in shared/memory/files.py.

An entry written from outside a chat (`POST /memory/<kind>/entries`, what `eonyx mcp` sends
for a coding agent) is not an edit: it is the same write as the chat's memory tools (filter,
cap, duplicate check, backup, lock, `memory.updated`), and a refusal says why in one sentence.
"""

from __future__ import annotations

from typing import Any, cast

import marshmallow as ma
from flask.views import MethodView

from api.context import login_required, principal, runtime, scope_required
from api.extensions import Blueprint
from api.schemas import Line, Schema, StrictSchema, Text
from shared.core import registry
from shared.memory import entry
from shared.memory import files as memory
from shared.memory import tools as memory_tools
from shared.memory.entry import EntryWrite
from shared.memory.files import MemoryFile

blp = Blueprint("memory", __name__, description="Memory files")
KIND_PATH = f"/memory/<any({', '.join(memory.KINDS)}):kind>"


class MemoryFileSchema(Schema):
    kind = ma.fields.String()
    name = ma.fields.String()
    content = ma.fields.String()
    chars = ma.fields.Integer()
    limit = ma.fields.Integer()
    version = ma.fields.String()


class MemoryEditSchema(StrictSchema):
    content = Text(required=True, validate=ma.validate.Length(max=1_000_000))
    version = Line(
        load_default=None,
        allow_none=True,
        validate=ma.validate.Length(max=64),
        metadata={"description": "the `version` the editor read; a changed file is refused"},
    )


def _entry_field(name: str, field: type[Line] | type[Text]) -> ma.fields.Field:
    """One text field of the entry contract (shared/memory/entry.py): its limits and words."""
    contract = entry.FIELDS[name]
    return field(
        load_default=None,
        validate=ma.validate.Length(
            min=cast(int, contract["minLength"]), max=cast(int, contract["maxLength"])
        ),
        metadata={"description": contract["description"]},
    )


_MISSING = {
    "content": "{action} needs the entry's content",
    "old_text": "{action} needs old_text, a part of the entry",
}


class EntryWriteSchema(StrictSchema):
    """The API's form of the entry contract that the model's and the MCP tools take too."""

    action = Line(
        required=True,
        validate=ma.validate.OneOf(entry.ENTRY_ACTIONS),
        metadata={"description": "add an entry, replace one, or remove one"},
    )
    content = _entry_field("content", Text)
    old_text = _entry_field("old_text", Line)

    @ma.validates_schema
    def needs(self, data: dict[str, Any], **_: Any) -> None:
        action = data.get("action", "")
        needed = entry.NEEDS.get(action, ())
        for name in _MISSING:  # the content first, as the message names it
            if name in needed and not data.get(name):
                raise ma.ValidationError(_MISSING[name].format(action=action), name)


class EntryWrittenSchema(Schema):
    message = ma.fields.String(metadata={"description": "what was saved, in one sentence"})
    file = ma.fields.Nested(MemoryFileSchema)


class BackupSchema(Schema):
    name = ma.fields.String()


def _show(file: MemoryFile) -> dict[str, Any]:
    return {
        "kind": file.kind,
        "name": file.name,
        "content": file.content,
        "chars": file.chars,
        "limit": file.limit,
        "version": file.version,
    }


@blp.route(KIND_PATH)
class MemoryByKind(MethodView):
    @scope_required(registry.SCOPE_MEMORY_READ)
    @blp.response(200, MemoryFileSchema)
    def get(self, kind: str) -> dict[str, Any]:
        return _show(memory.read_for(runtime().memory, principal(), kind))

    @login_required
    @blp.arguments(MemoryEditSchema)
    @blp.response(200, MemoryFileSchema)
    def put(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        rt = runtime()
        saved = memory.edit(
            rt.memory, rt.redis, principal(), kind, body["content"], body["version"]
        )
        return _show(saved)


@blp.route(KIND_PATH + "/entries")
class MemoryEntries(MethodView):
    @scope_required(registry.SCOPE_MEMORY_WRITE)
    @blp.arguments(EntryWriteSchema)
    @blp.response(200, EntryWrittenSchema)
    def post(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        """Add, replace or remove one entry of USER.md (`user`) or MEMORY.md (`agent`), as
        the chat's memory tools do: the safety filter, the cap, the duplicate check, a
        backup, the file's lock, and `memory.updated` to your clients. A refused write
        answers 400 `memory_refused` or `blocked_by_filter` saying why; the identity is
        read-only here (403)."""
        rt = runtime()
        operation: EntryWrite = {"action": body["action"]}
        if body["content"] is not None:
            operation["content"] = body["content"]
        if body["old_text"] is not None:
            operation["old_text"] = body["old_text"]
        after, message = memory_tools.write_entry(
            rt.memory, rt.redis, rt.live_settings.settings(), principal(), kind, operation
        )
        return {"message": message, "file": _show(after)}


@blp.route(KIND_PATH + "/backups")
class MemoryBackups(MethodView):
    @login_required
    @blp.response(200, BackupSchema(many=True))
    def get(self, kind: str) -> list[dict[str, str]]:
        names = memory.backups_for(runtime().memory, principal(), kind)
        return [{"name": name} for name in names]


@blp.route(KIND_PATH + "/backups/<backup_name:name>/restore")
class MemoryRestore(MethodView):
    @login_required
    @blp.response(200, MemoryFileSchema)
    def post(self, kind: str, name: str) -> dict[str, Any]:
        rt = runtime()
        return _show(memory.restore(rt.memory, rt.redis, principal(), kind, name))
