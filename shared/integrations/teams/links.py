"""Teams users linked to Eonyx accounts by their Azure AD object id.

An administrator links a person (`eonyx users link NAME --teams-aad-id ID`); with
TEAMS_AUTO_PROVISION an unknown Teams user gets an account of their own on first message.
"""

from __future__ import annotations

import re
import secrets
import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shared.accounts import people
from shared.core.clock import utcnow
from shared.core.errors import InvalidInput, NotFound
from shared.db.orm import TeamsUserLink, User

PROVISIONED_PREFIX = "teams-"


def check_aad_id(aad_object_id: str) -> str:
    """An Azure AD object id is a GUID; kept in lower case."""
    try:
        return str(uuid.UUID(aad_object_id.strip()))
    except ValueError:
        raise InvalidInput(
            f"{aad_object_id!r} is not an Azure AD object id (a GUID)", code="invalid_aad_id"
        ) from None


def linked_user(db: Session, aad_object_id: str) -> User | None:
    link = db.get(TeamsUserLink, check_aad_id(aad_object_id))
    return db.get(User, link.user_id) if link else None


def link(db: Session, username: str, aad_object_id: str) -> tuple[User, str | None]:
    """Link the Teams user to `username`: (the user, the username it was linked to before,
    if another)."""
    aad = check_aad_id(aad_object_id)
    user = db.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None:
        raise NotFound(f"no user {username!r}")
    previous = linked_user(db, aad)
    db.merge(TeamsUserLink(aad_object_id=aad, user_id=user.id, created_at=utcnow()))
    moved_from = previous.username if previous and previous.id != user.id else None
    return user, moved_from


def _free_username(db: Session, display_name: str | None, aad: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", (display_name or "").lower()).strip("-")[:40]
    base = PROVISIONED_PREFIX + (slug or aad[:8])
    for candidate in (base, f"{base}-{aad[:8]}", f"{base}-{secrets.token_hex(4)}"):
        taken = db.scalar(select(User).where(func.lower(User.username) == candidate))
        if taken is None:
            return candidate
    raise AssertionError("a random suffix is free")


def provision(db: Session, aad_object_id: str, display_name: str | None) -> User:
    """A new account for a Teams user, linked to them. Its password is random and never
    shown: the person chats through Teams (an admin can link a web account instead)."""
    aad = check_aad_id(aad_object_id)
    username = _free_username(db, display_name, aad)
    user = people.create_user(db, username, secrets.token_urlsafe(32))
    db.add(TeamsUserLink(aad_object_id=aad, user_id=user.id, created_at=utcnow()))
    db.flush()
    return user
