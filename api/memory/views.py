"""The memory panel: read and edit IDENTITY.md (admins), USER.md and MEMORY.md, with backups.

An edit here is the operator's: saved exactly as written, refused only over the limit, with a
timestamped backup of the previous file first. It applies from the next session (the
identity from the next restart); running sessions keep their snapshot.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint

from api.context import login_required, principal, runtime
from api.schemas import StrictSchema
from shared import events
from shared.errors import Forbidden, NotFound
from shared.memory import KINDS, Kind, MemoryFile

blp = Blueprint("memory", __name__, description="Memory files")


class MemoryFileSchema(ma.Schema):
    kind = ma.fields.String()
    name = ma.fields.String()
    content = ma.fields.String()
    chars = ma.fields.Integer()
    limit = ma.fields.Integer()


class MemoryEditSchema(StrictSchema):
    content = ma.fields.String(required=True, validate=ma.validate.Length(max=1_000_000))


class BackupSchema(ma.Schema):
    name = ma.fields.String()


def _target(kind: str) -> tuple[Kind, str | None]:
    """The file a caller may touch: the identity is the admins'; the others are the caller's."""
    if kind not in KINDS:
        raise NotFound(f"no memory {kind!r}; choose identity, user or agent")
    who = principal()
    if kind == "identity":
        if not who.is_admin:
            raise Forbidden("the identity is edited by administrators")
        return "identity", None
    return kind, who.user_id  # type: ignore[return-value]


def _show(file: MemoryFile) -> dict[str, Any]:
    return {
        "kind": file.kind,
        "name": file.name,
        "content": file.content,
        "chars": file.chars,
        "limit": file.limit,
    }


@blp.route("/memory/<kind>")
class MemoryByKind(MethodView):
    @login_required
    @blp.response(200, MemoryFileSchema)
    def get(self, kind: str) -> dict[str, Any]:
        return _show(runtime().memory.read(*_target(kind)))

    @login_required
    @blp.arguments(MemoryEditSchema)
    @blp.response(200, MemoryFileSchema)
    def put(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        rt = runtime()
        file_kind, user_id = _target(kind)
        saved = rt.memory.save(file_kind, user_id, body["content"])
        if user_id:
            events.publish(
                rt.redis,
                user_id,
                {"type": "memory.updated", "file": saved.name, "action": "edited"},
            )
        return _show(saved)


@blp.route("/memory/<kind>/backups")
class MemoryBackups(MethodView):
    @login_required
    @blp.response(200, BackupSchema(many=True))
    def get(self, kind: str) -> list[dict[str, str]]:
        return [{"name": name} for name in runtime().memory.backups(*_target(kind))]


@blp.route("/memory/<kind>/backups/<name>/restore")
class MemoryRestore(MethodView):
    @login_required
    @blp.response(200, MemoryFileSchema)
    def post(self, kind: str, name: str) -> dict[str, Any]:
        file_kind, user_id = _target(kind)
        return _show(runtime().memory.restore(file_kind, user_id, name))
