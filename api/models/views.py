"""The model catalog: everyone reads, admins write. A key's value is never returned."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api.context import admin_required, login_required, principal, runtime
from api.extensions import Blueprint
from api.models.schemas import (
    NewOfferingSchema,
    OfferingSchema,
    OfferingUpdateSchema,
    RoleSchema,
    RoleUpdateSchema,
)
from shared.core.errors import NotFound
from shared.llm import access, models

blp = Blueprint("models", __name__, description="Model catalog and task roles")


def _role(role: str) -> dict[str, Any]:
    rt = runtime()
    with rt.db.session() as db:
        bindings = models.role_bindings(db, rt.settings)
    if role not in bindings:
        raise NotFound(f"no role {role!r}; roles are {', '.join(models.ROLES)}")
    offering_id, explicit = bindings[role]
    return {"role": role, "offering_id": offering_id, "explicit": explicit}


@blp.route("/models/offerings")
class Offerings(MethodView):
    @login_required
    @blp.response(200, OfferingSchema(many=True))
    def get(self) -> list[models.OfferingView]:
        """Every offering; a plain user sees only those they may use (not those kept for
        groups they are in none of), without key variable, URL credentials nor groups."""
        rt, who = runtime(), principal()
        with rt.db.session() as db:
            offerings = models.list_offerings(db, rt.settings)
        return [o.shown_to(admin=who.is_admin) for o in access.visible(rt, who, offerings)]

    @admin_required
    @blp.arguments(NewOfferingSchema)
    @blp.response(201, OfferingSchema)
    def post(self, body: dict[str, Any]) -> models.OfferingView:
        with runtime().db.session() as db:
            return models.add_offering(db, **body).shown_to(admin=True)


@blp.route("/models/offerings/<offering_id:offering_id>")
class OfferingById(MethodView):
    @login_required
    @blp.response(200, OfferingSchema)
    def get(self, offering_id: str) -> models.OfferingView:
        """One offering; one the caller may not use is not found."""
        rt, who = runtime(), principal()
        with rt.db.session() as db:
            offering = models.get_offering(db, rt.settings, offering_id)
        if not access.may_use(rt, who, offering_id):
            raise NotFound(f"no offering {offering_id!r}")
        return offering.shown_to(admin=who.is_admin)

    @admin_required
    @blp.arguments(OfferingUpdateSchema)
    @blp.response(200, OfferingSchema)
    def patch(self, body: dict[str, Any], offering_id: str) -> models.OfferingView:
        """Keep the offering for some groups (`allowed_groups`), or open it to everyone
        again with an empty list. Administrators may always use every offering."""
        rt = runtime()
        with rt.db.session() as db:
            access.set_allowed_groups(db, rt.settings, offering_id, body["allowed_groups"])
            return models.get_offering(db, rt.settings, offering_id).shown_to(admin=True)

    @admin_required
    @blp.response(204)
    def delete(self, offering_id: str) -> None:
        with runtime().db.session() as db:
            models.delete_offering(db, offering_id)


@blp.route("/models/roles")
class Roles(MethodView):
    @login_required
    @blp.response(200, RoleSchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        return [_role(role) for role in models.ROLES]


@blp.route(f"/models/roles/<any({', '.join(models.ROLES)}):role>")
class RoleByName(MethodView):
    @login_required
    @blp.response(200, RoleSchema)
    def get(self, role: str) -> dict[str, Any]:
        return _role(role)

    @admin_required
    @blp.arguments(RoleUpdateSchema)
    @blp.response(200, RoleSchema)
    def put(self, body: dict[str, Any], role: str) -> dict[str, Any]:
        """Serve the role with an offering, or with `null` unset it: it follows the chat's
        offering again. (A role is a fixed name that always answers GET, so unsetting is a
        PUT, not a DELETE.)"""
        rt = runtime()
        with rt.db.session() as db:
            if body["offering_id"] is None:
                models.clear_role(db, role)
            else:
                models.set_role(db, rt.settings, role, body["offering_id"])
        return _role(role)
