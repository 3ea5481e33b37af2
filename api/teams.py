"""The Microsoft Teams bot endpoint (Bot Framework messaging endpoint).

Acknowledged as soon as the activity is checked and queued (202); a worker runs the turn and
posts the answer, so a slow model never times the channel out. Off (404) without TEAMS_APP_ID.
"""

from __future__ import annotations

from flask import Blueprint, request

from api.context import runtime
from shared.integrations.teams import bot

blp = Blueprint("teams", __name__)


@blp.post("/integrations/teams/messages")
def messages() -> tuple[str, int]:
    bot.receive(runtime(), request.headers.get("Authorization"), request.get_data())
    return "", 202
