"""Who may use which offering.

An offering may list groups (`offering_groups`): then only their members, and
administrators, see it and may name it in a turn; an offering that lists none is everyone's.
Offerings bound only to task roles (titles, summaries, extraction, curation: not the chat)
are left out of what plain users are offered to choose (`GET /v1/models`): they serve Eonyx's
own jobs. Administrators see and may use everything.

The answer is kept per process with the offerings (`OfferingCache.access`) and forgotten on
every change of the catalog or of the groups, so a turn's check costs no query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from shared.accounts.groups import GROUP_ID_RE, UnknownIds
from shared.core.errors import Forbidden, InvalidInput
from shared.core.settings import Settings
from shared.db.orm import Group, GroupMember, OfferingGroup
from shared.llm import models
from shared.llm.models import OfferingInfo
from shared.llm.offering_cache import Access, mark_changed

if TYPE_CHECKING:
    from shared.accounts.people import Principal
    from shared.llm.needs import LlmRuntime


def load(db: Session, settings: Settings) -> Access:
    """Who may use which offering, from the database (three small queries)."""
    restricted: defaultdict[str, set[str]] = defaultdict(set)
    for offering_id, group_id in db.execute(
        select(OfferingGroup.offering_id, OfferingGroup.group_id)
    ):
        restricted[offering_id].add(group_id)
    member_of: defaultdict[str, set[str]] = defaultdict(set)
    used = set().union(*restricted.values()) if restricted else set()
    if used:
        rows = db.execute(
            select(GroupMember.user_id, GroupMember.group_id).where(GroupMember.group_id.in_(used))
        )
        for user_id, group_id in rows:
            member_of[user_id].add(group_id)
    bindings = models.role_bindings(db, settings)
    chat = bindings["chat"][0]
    task_only = {
        offering_id
        for role, (offering_id, explicit) in bindings.items()
        if explicit and role != "chat" and offering_id is not None and offering_id != chat
    }
    return Access(
        restricted={k: frozenset(v) for k, v in restricted.items()},
        member_of={k: frozenset(v) for k, v in member_of.items()},
        task_only=frozenset(task_only),
    )


def current(rt: LlmRuntime) -> Access:
    """Who may use which offering, as this process keeps it."""

    def fresh() -> Access:
        with rt.db.session() as db:
            return load(db, rt.settings)

    return rt.offerings.access(fresh)


def may_use(rt: LlmRuntime, who: Principal, offering_id: str) -> bool:
    return who.is_admin or current(rt).allows(who.user_id, offering_id)


def check(rt: LlmRuntime, who: Principal, offering_id: str) -> None:
    """Forbidden (`offering_not_allowed`) unless `who` may use the offering."""
    if not may_use(rt, who, offering_id):
        raise Forbidden(
            f"the model {offering_id!r} is kept for some groups, and you are in none of them: "
            "ask an administrator",
            code="offering_not_allowed",
            param="model",
        )


def visible(
    rt: LlmRuntime, who: Principal, offerings: Iterable[OfferingInfo], *, chat_only: bool = False
) -> list[OfferingInfo]:
    """The offerings `who` may use; with `chat_only`, for a plain user, without those that
    only serve task roles. An administrator sees them all."""
    if who.is_admin:
        return list(offerings)
    access = current(rt)
    return [
        o
        for o in offerings
        if access.allows(who.user_id, o.id) and not (chat_only and o.id in access.task_only)
    ]


def set_allowed_groups(
    db: Session, settings: Settings, offering_id: str, group_ids: Sequence[str]
) -> None:
    """Only these groups' members (and administrators) may use the offering; none: everyone.
    Ids of no group are refused (UnknownIds, `unknown_groups`) and nothing changes."""
    offering = models.get_offering(db, settings, offering_id)  # NotFound
    wanted = set(group_ids)
    if offering.builtin and wanted:
        raise InvalidInput(
            f"the offering {offering_id!r} comes from the EONYX_LLM_* variables and is "
            "everyone's: add the same model as an offering of its own to keep it for groups",
            code="builtin_offering",
            param="allowed_groups",
        )
    candidates = {g for g in wanted if GROUP_ID_RE.fullmatch(g)}
    known = (
        set(db.scalars(select(Group.id).where(Group.id.in_(candidates)))) if candidates else set()
    )
    if wanted - known:
        raise UnknownIds("group", wanted - known, code="unknown_groups", param="allowed_groups")
    db.execute(delete(OfferingGroup).where(OfferingGroup.offering_id == offering_id))
    db.add_all(OfferingGroup(offering_id=offering_id, group_id=g) for g in sorted(wanted))
    db.flush()
    mark_changed(db)
