"""Groups of people, for administrators: made, renamed, filled and deleted here (or filled
from an OpenID provider's `groups` claim); an offering kept for groups
(`PATCH /models/offerings/<id>` with `allowed_groups`) may only be used by their members.
The domain is shared/accounts/groups.py; who may use what, shared/llm/access.py.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import admin_required, runtime
from api.extensions import Blueprint
from api.schemas import IdList, Line, Schema, StrictSchema
from shared.accounts import groups
from shared.core.text import NON_BLANK_LINE_PATTERN

blp = Blueprint("groups", __name__, description="Groups of people, and the models they may use")

Length = ma.validate.Length


def group_name(**kwargs: Any) -> Line:
    return Line(
        validate=Length(min=1, max=groups.NAME_MAX),
        pattern=NON_BLANK_LINE_PATTERN,
        pattern_error=f"a group's name is {groups.NAME_RULE}",
        metadata={"description": "unique; an OpenID provider's group claim fills the same name"},
        **kwargs,
    )


class MemberSchema(Schema):
    id = ma.fields.String()
    username = ma.fields.String()


class GroupSchema(Schema):
    id = ma.fields.String()
    name = ma.fields.String()
    created_at = ma.fields.AwareDateTime()
    members = ma.fields.List(ma.fields.Nested(MemberSchema))


class GroupNameSchema(StrictSchema):
    name = group_name(required=True)


class MembersSchema(StrictSchema):
    user_ids = IdList(
        most=10_000,
        description="the group's members from now on (GET /users); ids of no user "
        "are a 422 `unknown_users` naming them, and nothing changes",
    )


@blp.route("/groups")
class Groups(MethodView):
    @admin_required
    @blp.response(200, GroupSchema(many=True))
    def get(self) -> list[groups.GroupInfo]:
        """Every group with its members, by name."""
        with runtime().db.session() as db:
            return groups.list_groups(db)

    @admin_required
    @blp.arguments(GroupNameSchema)
    @blp.response(201, GroupSchema)
    def post(self, body: dict[str, Any]) -> groups.GroupInfo:
        """A new group, with no members. A name taken already is a 409 `group_exists`."""
        with runtime().db.session() as db:
            return groups.create_group(db, body["name"])


@blp.route("/groups/<group_id:group_id>")
class GroupById(MethodView):
    @admin_required
    @blp.response(200, GroupSchema)
    def get(self, group_id: str) -> groups.GroupInfo:
        with runtime().db.session() as db:
            return groups.get_group(db, group_id)

    @admin_required
    @blp.arguments(GroupNameSchema)
    @blp.response(200, GroupSchema)
    def patch(self, body: dict[str, Any], group_id: str) -> groups.GroupInfo:
        """Rename the group (offerings keep it: they name its id)."""
        with runtime().db.session() as db:
            return groups.rename_group(db, group_id, body["name"])

    @admin_required
    @blp.response(204)
    def delete(self, group_id: str) -> None:
        """Delete the group and its memberships. Refused (409 `group_in_use`) while it is
        the only group an offering allows: without it everyone could use that offering."""
        with runtime().db.session() as db:
            groups.delete_group(db, group_id)


@blp.route("/groups/<group_id:group_id>/members")
class GroupMembers(MethodView):
    @admin_required
    @blp.arguments(MembersSchema)
    @blp.response(200, GroupSchema)
    def put(self, body: dict[str, Any], group_id: str) -> groups.GroupInfo:
        """Set the group's members: exactly these users from now on."""
        with runtime().db.session() as db:
            return groups.set_members(db, group_id, body["user_ids"])
