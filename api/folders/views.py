"""Folders: list (with the palette), create, rename/recolor, delete, order."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.folders.schemas import (
    FolderListSchema,
    FolderOrderSchema,
    FolderPatchSchema,
    FolderSchema,
    NewFolderSchema,
)
from shared.db.orm import Folder
from shared.sessions import folders

blp = Blueprint("folders", __name__, description="Folders of sessions")


@blp.route("/folders")
class Folders(MethodView):
    @login_required
    @blp.response(200, FolderListSchema)
    def get(self) -> dict[str, Any]:
        """The folders in their order, and the palette their colors come from."""
        return {"items": folders.list_folders(runtime(), principal()), "palette": folders.palette()}

    @login_required
    @blp.arguments(NewFolderSchema)
    @blp.response(201, FolderSchema)
    def post(self, body: dict[str, Any]) -> Folder:
        """A new folder, last in the order."""
        return folders.create_folder(runtime(), principal(), body["name"], body["color"])


@blp.route("/folders/order")
class FolderOrder(MethodView):
    @login_required
    @blp.arguments(FolderOrderSchema)
    @blp.response(200, FolderListSchema)
    def put(self, body: dict[str, Any]) -> dict[str, Any]:
        """Reorder (drag and drop): the folders named, in that order, then any others."""
        ordered = folders.reorder_folders(runtime(), principal(), body["ids"])
        return {"items": ordered, "palette": folders.palette()}


@blp.route("/folders/<folder_id:folder_id>")
class FolderById(MethodView):
    @login_required
    @blp.arguments(FolderPatchSchema)
    @blp.response(200, FolderSchema)
    def patch(self, body: folders.FolderChanges, folder_id: str) -> Folder:
        """Rename and/or recolor."""
        return folders.update_folder(runtime(), principal(), folder_id, body)

    @login_required
    @blp.response(204)
    def delete(self, folder_id: str) -> None:
        """Delete the folder; its sessions become unfiled, never deleted."""
        folders.delete_folder(runtime(), principal(), folder_id)
