"""The deployment's run-time settings: GET /settings (anyone signed in reads them, so the web
client can say what is switched off) and PATCH /settings (administrators only).

Each switch is shown as {"value", "source", "environment"}: the value in effect, whether an
administrator set it ("admin") or the environment gives it ("environment"), and the
environment's value, which a PATCH with null goes back to. A change applies to the next
request of every API process and worker, without a restart (shared/accounts/live_settings.py).
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import admin_required, login_required, runtime
from api.extensions import Blueprint
from api.schemas import Flag, Int, Line, Schema, StrictSchema
from shared.accounts.live_settings import MAX_EVERY_N_TURNS, SwitchState
from shared.core.settings import TITLE_MODES

blp = Blueprint(
    "settings", __name__, description="Behaviour switches an administrator changes at run time"
)

_RESET = "null: back to the environment's value"


class SwitchSchema(Schema):
    value = ma.fields.Raw(allow_none=True, metadata={"description": "the value in effect"})
    source = ma.fields.String(
        metadata={"description": "admin: set here; environment: the environment's value"}
    )
    environment = ma.fields.Raw(
        allow_none=True, metadata={"description": "the environment's value (what null restores)"}
    )


class SettingsSchema(Schema):
    session_title_mode = ma.fields.Nested(
        SwitchSchema,
        metadata={"description": f"{', '.join(TITLE_MODES)}; null: by the session's source"},
    )
    user_profile_enabled = ma.fields.Nested(SwitchSchema)
    user_memory_extraction = ma.fields.Nested(SwitchSchema)
    user_memory_extraction_every_n_turns = ma.fields.Nested(SwitchSchema)
    agent_memory_enabled = ma.fields.Nested(SwitchSchema)


class SettingsUpdateSchema(StrictSchema):
    session_title_mode = Line(
        allow_none=True,
        validate=ma.validate.OneOf(
            TITLE_MODES, error=f"session_title_mode is one of {', '.join(TITLE_MODES)}"
        ),
        metadata={"description": f"{', '.join(TITLE_MODES)}; {_RESET}"},
    )
    user_profile_enabled = Flag(
        allow_none=True, metadata={"description": f"the user profile (USER.md); {_RESET}"}
    )
    user_memory_extraction = Flag(
        allow_none=True,
        metadata={"description": f"keep USER.md up to date from chats; {_RESET}"},
    )
    user_memory_extraction_every_n_turns = Int(
        allow_none=True,
        validate=ma.validate.Range(
            min=1,
            max=MAX_EVERY_N_TURNS,
            error=f"user_memory_extraction_every_n_turns is from 1 to {MAX_EVERY_N_TURNS}",
        ),
        metadata={"description": f"extract after every N user messages; {_RESET}"},
    )
    agent_memory_enabled = Flag(
        allow_none=True, metadata={"description": f"the agent memory (MEMORY.md); {_RESET}"}
    )


@blp.route("/settings")
class RuntimeSettings(MethodView):
    @login_required
    @blp.response(200, SettingsSchema)
    def get(self) -> dict[str, SwitchState]:
        """The behaviour switches in effect, where each comes from, and the environment's
        value. Everyone signed in reads them (the web client says what is switched off);
        only administrators change them."""
        return runtime().live_settings.describe()

    @admin_required
    @blp.arguments(SettingsUpdateSchema)
    @blp.response(200, SettingsSchema)
    def patch(self, body: dict[str, Any]) -> dict[str, SwitchState]:
        """Set the named switches (administrators only); null puts one back to the
        environment's value. Every API process and worker applies the change from its next
        request, without a restart. An invalid value is 422 and changes nothing."""
        live = runtime().live_settings
        live.change(body)
        return live.describe()
