"""Export and import: GET /sessions/<id>/export?format=zip|markdown, POST /sessions/import."""

from __future__ import annotations

import tempfile
from typing import IO, Any

import marshmallow as ma
from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.exceptions import RequestEntityTooLarge

from api.context import body_limit, login_required, principal, runtime
from api.schemas import Schema
from api.sessions.schemas import SessionSchema
from shared.core.errors import InvalidInput
from shared.sessions import bundles

blp = Blueprint("bundles", __name__, description="Export and import of sessions")

CHUNK = 64 * 1024
MULTIPART_SLACK = 64 * 1024  # a form's boundaries and headers around the bundle


class ExportArgsSchema(ma.Schema):
    format = ma.fields.String(
        load_default="zip", validate=ma.validate.OneOf(["zip", "markdown", "md"])
    )


class ImportResultSchema(Schema):
    session = ma.fields.Nested(SessionSchema)
    imported_from = ma.fields.Dict(
        metadata={"description": "the exported session's id and source, and when"}
    )


@blp.route("/sessions/<session_id:session_id>/export")
class Export(MethodView):
    @login_required
    @blp.arguments(ExportArgsSchema, location="query")
    @blp.response(200, description="a zip bundle, or a Markdown transcript")
    def get(self, args: dict[str, Any], session_id: str) -> Response:
        rt, who = runtime(), principal()
        if args["format"] == "zip":
            data: bytes | str = bundles.export_zip(rt, who, session_id)
            kind, name = "application/zip", f"eonyx-{session_id}.zip"
        else:
            data = bundles.export_markdown(rt, who, session_id)
            kind, name = "text/markdown; charset=utf-8", f"eonyx-{session_id}.md"
        return Response(
            data,
            content_type=kind,
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )


@blp.route("/sessions/import")
class Import(MethodView):
    @login_required
    @body_limit(lambda settings: settings.session_import_max_bytes + MULTIPART_SLACK)
    @blp.response(201, ImportResultSchema)
    def post(self) -> dict[str, Any]:
        """A new session from a bundle: the zip as the body (application/zip), or as the
        file `file` of a form. Over SESSION_IMPORT_MAX_BYTES is refused (413) as it streams
        in; a bad bundle is refused (400) with nothing saved."""
        rt = runtime()
        limit = rt.settings.session_import_max_bytes
        with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
            if request.mimetype == "multipart/form-data":
                upload = request.files.get("file")
                if upload is None:
                    raise InvalidInput("send the bundle as the form's file `file`")
                _copy(upload.stream, spool, limit)
            else:
                _copy(request.stream, spool, limit)
            spool.seek(0)
            row, imported_from = bundles.import_bundle(rt, principal(), rt.memory, spool)
        return {"session": row, "imported_from": imported_from}


def _copy(source: IO[bytes], target: IO[bytes], limit: int) -> None:
    """Copy in chunks, refusing (413) as soon as more than `limit` bytes came."""
    copied = 0
    while chunk := source.read(CHUNK):
        copied += len(chunk)
        if copied > limit:
            raise RequestEntityTooLarge(f"a bundle is at most {limit} bytes")
        target.write(chunk)
