"""Per-user storage quotas: how much of DATA_DIR a user may fill, and the check before a write.

A user's quota is `users.storage_quota_bytes`, or STORAGE_QUOTA_BYTES when that is NULL; 0
means no quota. It is per user: there are no groups (yet) to share one.

What a user uses is the running figure of `shared.files.usage` (what is counted, and how, is
described there), with the snapshots of their shared links, which the database keeps
(`share_bytes`): a share is a copy, and counts as one.
`check` runs before a write that adds bytes (a turn, an import, a fork, a share): a write
that would take the user past their quota is refused with `QuotaExceeded` and the
figures (used, quota, the request's size), before anything is written. Reading, deleting,
emptying the trash and every other way of freeing space are never checked. The check is
not a reservation: two writes checked at once may both pass, and a turn's answer is not
known when its message is checked, so a user may end a little past the quota; the next
write is then refused.
"""

from __future__ import annotations

from typing import Protocol, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.core.errors import InvalidInput, QuotaExceeded
from shared.core.settings import Settings
from shared.db.database import Database
from shared.db.orm import SessionRow, SessionShare, User
from shared.files.session_store import SessionStore
from shared.files.usage import measure


class StorageRuntime(Protocol):
    settings: Settings
    db: Database
    store: SessionStore


def quota_of(settings: Settings, override: int | None) -> int:
    """A user's quota in bytes (0: none) from their override (None: the deployment's)."""
    return settings.storage_quota_bytes if override is None else override


def quota_for(rt: StorageRuntime, user_id: str) -> int:
    with rt.db.session() as db:
        override = db.scalar(select(User.storage_quota_bytes).where(User.id == user_id))
    return quota_of(rt.settings, override)


def share_bytes(snapshot: str) -> int:
    """What a shared link's snapshot (its row's JSON text) counts against its owner's quota."""
    return len(snapshot.encode())


def measure_user(rt: StorageRuntime, user_id: str) -> dict[str, int]:
    """The user's bytes by kind, walked from disk (the sessions in the trash from the index),
    and their shared links' snapshots from the database."""
    with rt.db.session() as db:
        trashed = set(
            db.scalars(
                select(SessionRow.id).where(
                    SessionRow.user_id == user_id, SessionRow.deleted_at.is_not(None)
                )
            )
        )
        snapshots = db.scalars(select(SessionShare.messages).where(SessionShare.user_id == user_id))
        shared = sum(map(share_bytes, snapshots))
    return measure(rt.store.users_dir / user_id, trashed) | {"shares": shared}


def used_by_kind(rt: StorageRuntime, user_id: str, *, fresh: bool = False) -> dict[str, int]:
    """The running figure, or (`fresh`) a new measurement from disk that replaces it."""
    meter = rt.store.usage
    if fresh:
        return meter.reconcile(user_id, lambda: measure_user(rt, user_id))
    return meter.get(user_id, lambda: measure_user(rt, user_id))


class StorageUsage(TypedDict):
    used_bytes: int
    quota_bytes: int  # 0: none
    by_kind: dict[str, int]  # sessions, images, memory, exports...


def storage_usage(rt: StorageRuntime, user_id: str, *, fresh: bool = False) -> StorageUsage:
    """`{"used_bytes", "quota_bytes", "by_kind"}`: what /me/usage shows (quota 0: none)."""
    by_kind = used_by_kind(rt, user_id, fresh=fresh)
    return {
        "used_bytes": sum(by_kind.values()),
        "quota_bytes": quota_for(rt, user_id),
        "by_kind": by_kind,
    }


def check(rt: StorageRuntime, user_id: str, adding: int) -> None:
    """Refuse (QuotaExceeded) a write of `adding` bytes that would take the user past their
    quota; a request larger than the whole quota is refused whatever is used."""
    quota = quota_for(rt, user_id)
    if not quota:
        return
    if adding > quota:
        used = sum(used_by_kind(rt, user_id).values())
        raise QuotaExceeded(
            f"this request needs {adding} bytes, more than your whole storage quota of "
            f"{quota} bytes",
            used=used,
            quota=quota,
            request=adding,
        )
    used = sum(used_by_kind(rt, user_id).values())
    if used + adding > quota:
        raise QuotaExceeded(
            f"your storage quota is full: {used} of {quota} bytes used, this request needs "
            f"{adding} more; delete sessions (and empty the trash) to free space",
            used=used,
            quota=quota,
            request=adding,
        )


def set_quota(db: Session, user: User, quota: int | None) -> None:
    """An administrator's quota for one user, in bytes: 0 for none, None for the deployment's
    (STORAGE_QUOTA_BYTES)."""
    if quota is not None and quota < 0:
        raise InvalidInput("a storage quota is 0 (none) or more bytes", code="invalid_quota")
    user.storage_quota_bytes = quota
    db.flush()
