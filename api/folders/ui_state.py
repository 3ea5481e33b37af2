"""GET/PUT /devices/<device_id>/ui-state: which folders and sidebar sections a device keeps
collapsed (folders start collapsed; the Folders and Chats sections start expanded)."""

from __future__ import annotations

from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.folders.schemas import UiStatePutSchema, UiStateSchema
from shared.sessions import folders

blp = Blueprint("ui_state", __name__, description="The sidebar state of each device")


@blp.route("/devices/<device_id:device_id>/ui-state")
class DeviceUiState(MethodView):
    @login_required
    @blp.response(200, UiStateSchema)
    def get(self, device_id: str) -> folders.DeviceUiStateView:
        return folders.get_ui_state(runtime(), principal(), device_id)

    @login_required
    @blp.arguments(UiStatePutSchema)
    @blp.response(200, UiStateSchema)
    def put(self, body: folders.UiStateChanges, device_id: str) -> folders.DeviceUiStateView:
        """Set what is sent; sections and folders not sent keep their state."""
        return folders.put_ui_state(runtime(), principal(), device_id, body)
