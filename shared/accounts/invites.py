"""Invites: a link an administrator makes, with which one person makes their own account.

An invite's secret (`secrets.token_urlsafe`) is shown once, in its URL; only its SHA-256 is
kept (orm.Invite), as for tokens. Accepting it makes the account (the username and password
rules of `create_user`, the invite's `is_admin`) and marks the invite used in one
transaction: the invite is claimed first by one conditional UPDATE (`used_at` still unset,
not expired), so of two accepts at once only one claims it (the other waits for the row's
lock on PostgreSQL, for the database's write lock on SQLite, then finds it used: 410). A
refused account (the username taken, a bad password) rolls the claim back: the invite stays
usable. Accepting is throttled as logins are, per client address: a secret that names no
invite counts as a failed login, so secrets cannot be guessed cheaply.

Imports shared.core, shared.db and shared.accounts.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from shared.accounts import people
from shared.accounts.throttle import Throttle
from shared.core.errors import Gone, NotFound
from shared.db.orm import ApiToken, Invite, User

INVITE_ID_RE = people.TOKEN_ID_RE  # uuid4().hex
SECRET_MAX = 128  # longer than any secret made here: refused without a lookup


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_invite(
    db: Session, creator_id: str, *, is_admin: bool, ttl: timedelta, now: datetime
) -> tuple[Invite, str]:
    """A new invite and its secret (shown once: only its hash is kept)."""
    secret = secrets.token_urlsafe(32)
    invite = Invite(
        id=uuid.uuid4().hex,
        token_hash=_hash(secret),
        is_admin=is_admin,
        created_by=creator_id,
        created_at=now,
        expires_at=now + ttl,
    )
    db.add(invite)
    db.flush()
    return invite, secret


def pending_invites(db: Session, *, now: datetime) -> list[Invite]:
    """The invites not used yet and not expired, oldest first."""
    query = (
        select(Invite)
        .where(Invite.used_at.is_(None), Invite.expires_at > now)
        .order_by(Invite.created_at)
    )
    return list(db.scalars(query))


def revoke_invite(db: Session, invite_id: str) -> None:
    """Delete an invite that was not used (a used one is the record of who joined how)."""
    invite = db.get(Invite, invite_id) if INVITE_ID_RE.fullmatch(invite_id) else None
    if invite is None or invite.used_at is not None:
        raise NotFound("invite not found (or already used)", code="invite_not_found")
    db.delete(invite)


def accept_invite(
    db: Session,
    throttle: Throttle,
    address: str,
    secret: str,
    username: str,
    password: str,
    *,
    ttl: timedelta,
    now: datetime,
) -> tuple[User, ApiToken, str]:
    """Make the account the invite promises and sign it in: the user, and a browser sign-in
    (`people.BROWSER` token, lasting `ttl`) with its secret. 404 for a secret that names
    no invite (counted against `address` as a failed login; past a few, 429), 410 for a used
    or expired one; the rules of `create_user` for the username and password (409
    `user_exists` leaves the invite usable, as the whole transaction rolls back)."""
    address_key = people.login_address_key(address)
    people._check_blocks(throttle, ((address_key, "from this address"),))
    found = None
    if 0 < len(secret) <= SECRET_MAX:
        found = db.scalar(select(Invite).where(Invite.token_hash == _hash(secret)))
    if found is None:
        throttle.fail(address_key, people.ADDRESS_POLICY)
        raise NotFound("no such invite: check the link", code="invite_not_found")
    _claim(db, found, now)
    user = people.create_user(db, username, password, is_admin=found.is_admin)
    found.used_by = user.id
    db.flush()
    row, token = people._issue(db, user, "browser sign-in", people.BROWSER, ttl)
    return user, row, token


def _claim(db: Session, invite: Invite, now: datetime) -> None:
    """Mark `invite` used, if it still may be: one UPDATE that only an unused, unexpired
    invite matches, so that two accepts at once cannot both claim it."""
    claimed = db.execute(
        update(Invite)
        .where(Invite.id == invite.id, Invite.used_at.is_(None), Invite.expires_at > now)
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        db.refresh(invite)
        if invite.used_at is not None:
            raise Gone(
                "this invite was already used; ask an administrator for a new one",
                code="invite_used",
            )
        raise Gone(
            "this invite has expired; ask an administrator for a new one", code="invite_expired"
        )
    db.refresh(invite)
