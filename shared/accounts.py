"""Users, passwords and tokens.

Passwords are hashed with werkzeug's scrypt. Tokens are 32 random bytes shown once; only their
SHA-256 is stored (a token has enough entropy that a slow hash adds nothing). A login token
(source `web`) expires; an API key (source `api`) lives until it is revoked.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from shared.core.errors import Conflict, InvalidInput, NotFound, Unauthorized
from shared.storage.db import UTCDateTime
from shared.storage.orm import ApiToken, User

TOKEN_PREFIX = "eyx_"
USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MIN_PASSWORD = 8
SOURCES = ("web", "api")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user and how they authenticated."""

    user_id: str
    username: str
    is_admin: bool
    source: str
    token_id: str


def now() -> datetime:
    return datetime.now(UTC)


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(db: Session, username: str, password: str, *, is_admin: bool = False) -> User:
    if not USERNAME_RE.match(username):
        raise InvalidInput(
            "username must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"password must be at least {MIN_PASSWORD} characters")
    if db.scalar(select(User).where(func.lower(User.username) == username.lower())):
        raise Conflict(f"user {username!r} already exists", code="user_exists")
    user = User(
        id=uuid.uuid4().hex,
        username=username,
        password_hash=generate_password_hash(password),
        is_admin=is_admin,
        created_at=now(),
    )
    db.add(user)
    db.flush()
    return user


def list_users(db: Session) -> list[User]:
    return list(db.scalars(select(User).order_by(User.created_at)))


def _issue(
    db: Session, user: User, name: str, source: str, ttl: timedelta | None
) -> tuple[ApiToken, str]:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    created = now()
    row = ApiToken(
        id=uuid.uuid4().hex,
        user_id=user.id,
        name=name,
        source=source,
        token_hash=_hash_token(token),
        created_at=created,
        expires_at=created + ttl if ttl else None,
    )
    db.add(row)
    db.flush()
    return row, token


def login(db: Session, username: str, password: str, ttl: timedelta) -> tuple[ApiToken, str]:
    """A new expiring `web` token for the right password; one vague error otherwise."""
    user = db.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None or not check_password_hash(user.password_hash, password):
        raise Unauthorized("wrong username or password", code="bad_credentials")
    return _issue(db, user, "login", "web", ttl)


def create_api_key(db: Session, principal: Principal, name: str) -> tuple[ApiToken, str]:
    name = name.strip()
    if not name:
        raise InvalidInput("an API key needs a name")
    user = db.get(User, principal.user_id)
    if user is None:
        raise NotFound("user not found")
    return _issue(db, user, name, "api", None)


def list_tokens(db: Session, principal: Principal) -> list[ApiToken]:
    query = (
        select(ApiToken)
        .where(ApiToken.user_id == principal.user_id, ApiToken.revoked_at.is_(None))
        .order_by(ApiToken.created_at)
    )
    return [t for t in db.scalars(query) if not _expired(t)]


def revoke_token(db: Session, principal: Principal, token_id: str) -> None:
    row = db.get(ApiToken, token_id)
    if row is None or row.user_id != principal.user_id or row.revoked_at is not None:
        raise NotFound("token not found")
    row.revoked_at = now()


def _expired(row: ApiToken) -> bool:
    return row.expires_at is not None and row.expires_at <= now()


# Built once (SQLAlchemy then reuses its compiled form): every request runs it. Plain
# columns, not entities: nothing here needs an ORM object, and loading two costs more than
# the round trip.
_BY_TOKEN = (
    select(
        ApiToken.id,
        ApiToken.source,
        ApiToken.expires_at,
        ApiToken.revoked_at,
        ApiToken.last_used_at,
        User.id,
        User.username,
        User.is_admin,
    )
    .join(User, User.id == ApiToken.user_id)
    .where(ApiToken.token_hash == bindparam("token_hash"))
)
_TOUCH = (
    update(ApiToken)
    .where(ApiToken.id == bindparam("token_id"))
    .values(last_used_at=bindparam("stamp", type_=UTCDateTime()))
)
TOUCH_EVERY = timedelta(minutes=5)


def authenticate(db: Session, token: str) -> Principal:
    """The principal behind a bearer token, or `Unauthorized`. One query; `last_used_at`
    is written at most every five minutes."""
    connection = db.connection()
    found = connection.execute(_BY_TOKEN, {"token_hash": _hash_token(token)}).first()
    if found is None:
        raise Unauthorized("invalid, expired or revoked token", code="invalid_token")
    token_id, source, expires_at, revoked_at, last_used_at, user_id, username, is_admin = found
    stamp = now()
    if revoked_at is not None or (expires_at is not None and expires_at <= stamp):
        raise Unauthorized("invalid, expired or revoked token", code="invalid_token")
    if last_used_at is None or stamp - last_used_at > TOUCH_EVERY:
        connection.execute(_TOUCH, {"token_id": token_id, "stamp": stamp})
    return Principal(user_id, username, is_admin, source, token_id)
