"""Groups of people: made and filled by an administrator, or from an OpenID provider's
`groups` claim (`set_groups_by_name`). A group grants nothing by itself: an offering that
lists groups (shared.llm.access) may only be used by their members, and by administrators.

Every change here marks its database session (`CHANGED`); when it commits, the offering
cache of every process forgets who may use what (shared.llm.offering_cache), so the next
turn sees the new memberships.

Deleting a group that is the last one an offering allows is refused: with no group left the
offering would be open to everyone, the opposite of what deleting people's access means.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from shared.core import text
from shared.core.clock import utcnow
from shared.core.errors import Conflict, InvalidInput, NotFound
from shared.db.orm import Group, GroupMember, OfferingGroup, User

log = logging.getLogger(__name__)

CHANGED = "eonyx.groups_changed"  # the mark in Session.info (see the module's docstring)
NAME_MAX = 64
NAME_RULE = f"1-{NAME_MAX} characters on one line, not only spaces"
GROUP_ID_RE = re.compile(r"^[0-9a-f]{32}$")  # uuid4().hex, as a user's id


class UnknownIds(InvalidInput):
    """Ids in a request that name nothing (users for a group, groups for an offering):
    the request is well formed but cannot be carried out; `details` lists them."""

    def __init__(self, what: str, ids: Iterable[str], *, code: str, param: str) -> None:
        unknown = sorted(set(ids))
        super().__init__(
            f"{param}: no {what} has the id{'s' * (len(unknown) > 1)} {', '.join(unknown)}",
            param=param,
        )
        self.code = code
        self.details = {"unknown_ids": unknown}


@dataclass(frozen=True)
class Member:
    id: str
    username: str


@dataclass(frozen=True)
class GroupInfo:
    id: str
    name: str
    created_at: datetime
    members: tuple[Member, ...]


def mark_changed(db: Session) -> None:
    db.info[CHANGED] = True


def check_name(name: str) -> str:
    """The name without surrounding spaces, or InvalidInput."""
    text.check(name, "name", single_line=True)
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise InvalidInput(f"a group's name is {NAME_RULE}", code="invalid_group_name")
    return name


def _row(db: Session, group_id: str) -> Group:
    row = db.get(Group, group_id) if GROUP_ID_RE.fullmatch(group_id) else None
    if row is None:
        raise NotFound(f"no group {group_id!r}", code="group_not_found")
    return row


def _name_free(db: Session, name: str, *, but: str | None = None) -> None:
    clash = db.scalar(select(Group.id).where(Group.name == name))
    if clash is not None and clash != but:
        raise Conflict(f"a group named {name!r} already exists", code="group_exists")


def _infos(db: Session, rows: list[Group]) -> list[GroupInfo]:
    members: dict[str, list[Member]] = {row.id: [] for row in rows}
    if rows:
        found = db.execute(
            select(GroupMember.group_id, User.id, User.username)
            .join(User, User.id == GroupMember.user_id)
            .where(GroupMember.group_id.in_(list(members)))
            .order_by(User.username)
        )
        for group_id, user_id, username in found:
            members[group_id].append(Member(user_id, username))
    return [GroupInfo(r.id, r.name, r.created_at, tuple(members[r.id])) for r in rows]


def list_groups(db: Session) -> list[GroupInfo]:
    """Every group with its members, by name."""
    return _infos(db, list(db.scalars(select(Group).order_by(Group.name))))


def get_group(db: Session, group_id: str) -> GroupInfo:
    return _infos(db, [_row(db, group_id)])[0]


def groups_of(db: Session, user_id: str) -> list[GroupInfo]:
    """The groups `user_id` belongs to, by name."""
    rows = db.scalars(
        select(Group)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.user_id == user_id)
        .order_by(Group.name)
    )
    return _infos(db, list(rows))


def create_group(db: Session, name: str) -> GroupInfo:
    name = check_name(name)
    _name_free(db, name)
    row = Group(id=uuid.uuid4().hex, name=name, created_at=utcnow())
    db.add(row)
    db.flush()
    mark_changed(db)
    return GroupInfo(row.id, row.name, row.created_at, ())


def rename_group(db: Session, group_id: str, name: str) -> GroupInfo:
    row = _row(db, group_id)
    name = check_name(name)
    _name_free(db, name, but=row.id)
    row.name = name
    db.flush()
    mark_changed(db)
    return get_group(db, group_id)


def delete_group(db: Session, group_id: str) -> None:
    """Delete the group and its memberships; refused (409 `group_in_use`) while it is the
    only group an offering allows (see the module's docstring)."""
    row = _row(db, group_id)
    groups_per_offering = (
        select(OfferingGroup.offering_id, func.count().label("n"))
        .group_by(OfferingGroup.offering_id)
        .subquery()
    )
    only_one = db.scalars(
        select(OfferingGroup.offering_id)
        .join(groups_per_offering, groups_per_offering.c.offering_id == OfferingGroup.offering_id)
        .where(OfferingGroup.group_id == row.id, groups_per_offering.c.n == 1)
        .order_by(OfferingGroup.offering_id)
    ).all()
    if only_one:
        raise Conflict(
            f"the group {row.name!r} is the only one allowed to use {', '.join(only_one)}: "
            "without it everyone could; allow other groups there (or none, for everyone) first",
            code="group_in_use",
        )
    db.execute(delete(GroupMember).where(GroupMember.group_id == row.id))
    db.execute(delete(OfferingGroup).where(OfferingGroup.group_id == row.id))
    db.delete(row)
    mark_changed(db)


def set_members(db: Session, group_id: str, user_ids: Iterable[str]) -> GroupInfo:
    """The group's members become exactly `user_ids`; ids of no user are refused
    (UnknownIds, `unknown_users`) and nothing changes."""
    row = _row(db, group_id)
    wanted = set(user_ids)
    known = set(db.scalars(select(User.id).where(User.id.in_(wanted)))) if wanted else set()
    if wanted - known:
        raise UnknownIds("user", wanted - known, code="unknown_users", param="user_ids")
    db.execute(delete(GroupMember).where(GroupMember.group_id == row.id))
    db.add_all(GroupMember(group_id=row.id, user_id=user_id) for user_id in sorted(wanted))
    db.flush()
    mark_changed(db)
    return get_group(db, group_id)


def set_groups_by_name(db: Session, user_id: str, names: Iterable[str]) -> list[GroupInfo]:
    """Make the user a member of exactly the groups named `names` (an ID token's `groups`
    claim, at each OpenID sign-in): the provider is the source of truth for who belongs
    where, so a group left at the provider is left here at the next sign-in, and a
    membership given by hand to such an account lasts until then.

    A named group that does not exist yet is created. That is what single sign-on wants:
    the groups appear in the admin's editor as soon as someone of them has signed in, named
    exactly as the provider sends them (no typing of a GUID or a `/path/name` to get it
    right), and a new group grants nothing until an administrator allows it on an offering.
    A name that cannot be a group's (too long, control characters) is skipped and logged."""
    if db.get(User, user_id) is None:
        raise NotFound("user not found", code="user_not_found")
    wanted: set[str] = set()
    for name in names:
        try:
            wanted.add(check_name(name))
        except InvalidInput as exc:
            log.warning("group claim %r skipped: %s", name[:80], exc.message)
    existing = {g.name: g for g in db.scalars(select(Group).where(Group.name.in_(wanted)))}
    for name in sorted(wanted - existing.keys()):
        row = Group(id=uuid.uuid4().hex, name=name, created_at=utcnow())
        db.add(row)
        existing[name] = row
    db.flush()
    ids = {existing[name].id for name in wanted}
    had = set(db.scalars(select(GroupMember.group_id).where(GroupMember.user_id == user_id)))
    if had != ids:
        db.execute(
            delete(GroupMember).where(
                GroupMember.user_id == user_id, GroupMember.group_id.not_in(ids)
            )
        )
        db.add_all(GroupMember(group_id=gid, user_id=user_id) for gid in sorted(ids - had))
        db.flush()
        mark_changed(db)
    return groups_of(db, user_id)
