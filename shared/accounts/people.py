"""Users, passwords and tokens.

Passwords are hashed with werkzeug's scrypt. Tokens are 32 random bytes shown once; only their
SHA-256 is stored (a token has enough entropy that a slow hash adds nothing). A login token
(source `web`) expires; an API key (source `api`) lives until it is revoked. A browser's
sign-in (source `browser`) is a token too, so that it can be listed and revoked like the
others; it is only accepted from the session cookie, and only it is, so a bearer token cannot
be planted as a cookie nor a cookie's value replayed without the cookie's CSRF rule. Its CSRF
token is derived from it (`csrf_token`): bound to the sign-in, nothing more to store.

Logins are throttled (`attempt_login`): per account and per client address, failures past a
few free ones block further attempts with a doubling backoff, answered 429 with the wait and
without hashing anything. An unknown username costs the same hash as a known one, so the
answer's timing does not tell whether an account exists.

Accounts have a lifecycle an administrator runs (`update_user`, `delete_user`): a password
set by an administrator or changed by its owner (`change_own_password`) ends the account's
other sign-ins and tokens; a disabled account keeps its data and its tokens, but none is
accepted (`authenticate`) until it is enabled again; a deleted one leaves nothing behind.
The deployment always keeps one enabled administrator: a change that would leave none is
refused (`last_admin`). Whoever changes who may sign in must then call the runtime's
`auth_changed`, so that every process's token cache forgets the user's tokens and open event
sockets check again at once.

Imports shared.core, shared.infra, shared.files, shared.db and shared.index.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import math
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, text, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from shared.accounts.throttle import Policy, Throttle
from shared.accounts.token_cache import TokenCache
from shared.core import registry
from shared.core import text as text_rule
from shared.core.clock import utcnow
from shared.core.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TooManyRequests,
    Unauthorized,
)
from shared.db.database import Database, UTCDateTime, dialect_of
from shared.db.orm import ApiToken, User
from shared.files.filestore import remove_tree
from shared.files.session_store import SessionStore
from shared.index import sync

log = logging.getLogger(__name__)

TOKEN_PREFIX = "eyx_"
USERNAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
USERNAME_RE = re.compile(USERNAME_PATTERN)
USERNAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
MIN_PASSWORD = 8
MAX_PASSWORD = 1024
PASSWORD_RULE = (
    f"at least {MIN_PASSWORD} and at most {MAX_PASSWORD} characters on one line (spaces are "
    "fine; tabs, line breaks and other control characters are not)"
)
TOKEN_NAME_MAX = 100
TOKEN_ID_RE = re.compile(r"^[0-9a-f]{32}$")
USER_ID_RE = TOKEN_ID_RE  # both are uuid4().hex
SOURCES = ("web", "api", "browser")
BROWSER = "browser"  # the source of a browser sign-in
# Failures before a block, how long they are remembered, first and longest block (seconds).
ACCOUNT_POLICY = Policy(free=5, window=15 * 60, base=2, ceiling=15 * 60)
ADDRESS_POLICY = Policy(free=30, window=15 * 60, base=2, ceiling=15 * 60)
ADMIN_LOCK = 0x656F6E7975  # PostgreSQL advisory lock: changes to who administers take turns
DISABLED_MESSAGE = "this account is disabled; ask an administrator"
# What an API key may be limited to when it is made; a key without scopes may do everything
# its user may (every key made before scopes existed keeps that). A scoped key is refused
# every route that does not name one of its scopes (api/context.py, `scope_required`).
SCOPES = {
    registry.SCOPE_MEMORY_READ: "read USER.md and MEMORY.md (and the identity)",
    registry.SCOPE_MEMORY_WRITE: "add, replace and remove entries of USER.md and MEMORY.md, "
    "and append notes to sessions",
    registry.SCOPE_SESSIONS_READ: "search the sessions and read their transcripts",
}


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user and how they authenticated."""

    user_id: str
    username: str
    is_admin: bool
    source: str
    token_id: str
    # None: full access (a login, a sign-in, an API key made without scopes); otherwise the
    # only scopes the key was given (see SCOPES).
    scopes: frozenset[str] | None = None
    # An administrator reset the password: until the user changes it, this sign-in may only
    # change it or sign out (api/context.py refuses the rest: `password_change_required`).
    must_change_password: bool = False


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_password_rule(password: str) -> None:
    found = text_rule.problem(password, single_line=True)
    if found is not None or not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        reason = f" (it {found})" if found else ""
        raise InvalidInput(f"a password must be {PASSWORD_RULE}{reason}", code="bad_password")


def create_user(db: Session, username: str, password: str, *, is_admin: bool = False) -> User:
    if not USERNAME_RE.fullmatch(username):
        raise InvalidInput(f"a username must be {USERNAME_RULE}", code="bad_username")
    check_password_rule(password)
    if db.scalar(select(User).where(func.lower(User.username) == username.lower())):
        raise Conflict(f"user {username!r} already exists", code="user_exists")
    user = User(
        id=uuid.uuid4().hex,
        username=username,
        password_hash=generate_password_hash(password),
        is_admin=is_admin,
        created_at=utcnow(),
    )
    db.add(user)
    db.flush()
    return user


def list_users(db: Session) -> list[User]:
    return list(db.scalars(select(User).order_by(User.created_at)))


def last_activity(db: Session) -> dict[str, datetime]:
    """Each user's last use of any of their tokens (sign-ins, login tokens, API keys), as
    `last_used_at` records it (to within five minutes); a user with none is absent."""
    query = select(ApiToken.user_id, func.max(ApiToken.last_used_at)).group_by(ApiToken.user_id)
    return {user_id: stamp for user_id, stamp in db.execute(query) if stamp is not None}


def _issue(
    db: Session,
    user: User,
    name: str,
    source: str,
    ttl: timedelta | None,
    scopes: frozenset[str] | None = None,
) -> tuple[ApiToken, str]:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    created = utcnow()
    row = ApiToken(
        id=uuid.uuid4().hex,
        user_id=user.id,
        name=name,
        source=source,
        token_hash=_hash_token(token),
        created_at=created,
        expires_at=created + ttl if ttl else None,
        scopes=" ".join(sorted(scopes)) if scopes else None,
    )
    db.add(row)
    db.flush()
    return row, token


@functools.cache
def _dummy_hash() -> str:
    """A hash to check the password of an unknown user against, so that the answer costs
    the same time as for a known one."""
    return generate_password_hash(secrets.token_urlsafe(16))


def login(
    db: Session, username: str, password: str, ttl: timedelta, source: str = "web"
) -> tuple[ApiToken, str]:
    """A new expiring `source` token (`web`, or `browser` for a sign-in cookie) for the right
    password; one vague error otherwise."""
    user = None
    if USERNAME_RE.fullmatch(username):  # anything else cannot name an account
        user = db.scalar(select(User).where(func.lower(User.username) == username.lower()))
    ok = check_password_hash(user.password_hash if user else _dummy_hash(), password)
    if user is None or not ok:
        raise Unauthorized("wrong username or password", code="bad_credentials")
    if user.disabled:  # said only to who knows the password
        raise Forbidden(DISABLED_MESSAGE, code="account_disabled")
    _prune_ended(db, user.id)
    return _issue(db, user, "login" if source == "web" else "browser sign-in", source, ttl)


def browser_sign_in(db: Session, user: User, ttl: timedelta) -> tuple[ApiToken, str]:
    """A browser sign-in (the session cookie's token) for a user who proved who they are
    another way than a password (an OpenID provider); refused as `login` refuses a disabled
    account."""
    if user.disabled:
        raise Forbidden(DISABLED_MESSAGE, code="account_disabled")
    _prune_ended(db, user.id)
    return _issue(db, user, "browser sign-in", BROWSER, ttl)


def _prune_ended(db: Session, user_id: str) -> None:
    """Delete the user's tokens that no longer work (expired or revoked): each login makes
    one, and without this their rows would pile up for good. No process accepts them
    already (expiry is checked on every request, and a revocation reached every cache)."""
    ended = (ApiToken.revoked_at.is_not(None)) | (ApiToken.expires_at <= utcnow())
    db.execute(delete(ApiToken).where(ApiToken.user_id == user_id, ended))


def attempt_login(
    db: Session,
    throttle: Throttle,
    address: str,
    username: str,
    password: str,
    ttl: timedelta,
    source: str = "web",
) -> tuple[ApiToken, str]:
    """`login`, throttled per account and per client `address` (see the module doc)."""
    account_key = _account_key(username)
    address_key = login_address_key(address)
    _check_blocks(throttle, ((account_key, "for this account"), (address_key, "from this address")))
    try:
        issued = login(db, username, password, ttl, source)
    except Unauthorized:
        block = max(
            throttle.fail(account_key, ACCOUNT_POLICY), throttle.fail(address_key, ADDRESS_POLICY)
        )
        if block:
            raise Unauthorized(
                "wrong username or password; after too many failures the next try must wait "
                f"{wait_text(block)}",
                code="bad_credentials",
            ) from None
        raise
    throttle.reset(account_key)
    return issued


def login_address_key(address: str) -> str:
    """The throttle's key for failed logins (and invite guesses) from a client address."""
    return "login:addr:" + address


def _account_key(username: str) -> str:
    return "login:user:" + hashlib.sha256(username.lower().encode()).hexdigest()


def _check_blocks(throttle: Throttle, keys: tuple[tuple[str, str], ...]) -> None:
    """`TooManyRequests` while any of `keys` ((key, whose it is)) is blocked."""
    for key, whose in keys:
        wait = throttle.blocked_for(key)
        if wait:
            raise TooManyRequests(
                f"too many failed logins {whose}: try again in {wait_text(wait)}",
                retry_after=wait,
                code="too_many_logins",
            )


def wait_text(seconds: int) -> str:
    """`1 second`, `40 seconds`, `3 minutes`: a wait as a person reads it (rounded up)."""
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


def check_scopes(scopes: list[str] | None) -> frozenset[str] | None:
    """The scopes asked for a new key, checked; None (full access) for none."""
    if not scopes:
        return None
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown:
        raise InvalidInput(
            f"unknown scope {unknown[0]!r}; the scopes are {', '.join(SCOPES)}",
            code="unknown_scope",
            param="scopes",
        )
    return frozenset(scopes)


def scopes_of(stored: str | None) -> frozenset[str] | None:
    """A token row's scopes as a principal carries them (None: full access)."""
    return frozenset(stored.split()) if stored and stored.strip() else None


def create_api_key(
    db: Session,
    principal: Principal,
    name: str,
    scopes: list[str] | None = None,
    *,
    limit: int | None = None,
) -> tuple[ApiToken, str]:
    """A new API key of the caller's; with `scopes`, limited to them. A scoped key cannot
    make a key (its routes name no scope), so no key gets more than its maker had. With
    `limit` (the API passes API_KEYS_PER_USER), a user holding that many live keys is
    refused 409 `too_many_api_keys` until they revoke one: rate limits count per user, but
    every key is a row and a line in the listing. Login tokens and sign-ins are not keys."""
    granted = check_scopes(scopes)
    text_rule.check(name, "name", single_line=True)
    name = name.strip()
    if not name:
        raise InvalidInput("an API key needs a name")
    if len(name) > TOKEN_NAME_MAX:
        raise InvalidInput(f"an API key's name is at most {TOKEN_NAME_MAX} characters")
    # the user's row locked (PostgreSQL): keys made at the same moment are counted in turn
    user = db.get(User, principal.user_id, with_for_update=limit is not None)
    if user is None:
        raise NotFound("user not found")
    if limit is not None:
        _check_key_count(db, user.id, limit)
    return _issue(db, user, name, "api", None, granted)


def _check_key_count(db: Session, user_id: str, limit: int) -> None:
    now = utcnow()
    held = db.scalar(
        select(func.count())
        .select_from(ApiToken)
        .where(
            ApiToken.user_id == user_id,
            ApiToken.source == "api",
            ApiToken.revoked_at.is_(None),
            (ApiToken.expires_at.is_(None)) | (ApiToken.expires_at > now),
        )
    )
    if (held or 0) >= limit:
        raise Conflict(
            f"you hold {held} API keys, the most an account may (API_KEYS_PER_USER={limit}); "
            "revoke one you no longer use (DELETE /api/v1/tokens/<id>, ids from GET "
            "/api/v1/tokens; `eonyx tokens revoke <id>`) and try again",
            code="too_many_api_keys",
        )


def list_tokens(db: Session, principal: Principal, *, now: datetime) -> list[ApiToken]:
    query = (
        select(ApiToken)
        .where(ApiToken.user_id == principal.user_id, ApiToken.revoked_at.is_(None))
        .order_by(ApiToken.created_at)
    )
    return [t for t in db.scalars(query) if not _expired(t, now)]


def revoke_token(db: Session, principal: Principal, token_id: str) -> None:
    row = db.get(ApiToken, token_id) if TOKEN_ID_RE.fullmatch(token_id) else None
    if row is None or row.user_id != principal.user_id or row.revoked_at is not None:
        raise NotFound("token not found")
    row.revoked_at = utcnow()


def revoke_all(db: Session, user_id: str, *, keep: str | None = None) -> int:
    """Revoke every live token of a user (sign-ins, login tokens, API keys) but `keep`;
    how many were revoked."""
    query = update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
    if keep:
        query = query.where(ApiToken.id != keep)
    return int(db.execute(query.values(revoked_at=utcnow())).rowcount or 0)  # type: ignore[attr-defined]


def get_user(db: Session, user_id: str) -> User:
    user = db.get(User, user_id) if USER_ID_RE.fullmatch(user_id) else None
    if user is None:
        raise NotFound("user not found", code="user_not_found")
    return user


def find_user(db: Session, name: str) -> User:
    """A user by username (not case-sensitive) or by id: how a person names one."""
    user = None
    if USERNAME_RE.fullmatch(name):
        user = db.scalar(select(User).where(func.lower(User.username) == name.lower()))
    if user is None and USER_ID_RE.fullmatch(name):
        user = db.get(User, name)
    if user is None:
        raise NotFound(f"no user {name!r}", code="user_not_found")
    return user


def _lock_admins(db: Session, user: User) -> int:
    """Take the turn of changes to who administers, then count the enabled administrators.
    Two administrators demoting each other at once must not leave none: on PostgreSQL an
    advisory transaction lock serialises them; on SQLite a write to the user's row takes the
    database's one write lock (reads alone would not)."""
    if dialect_of(db) == "postgresql":
        db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADMIN_LOCK})
    else:
        db.execute(update(User).where(User.id == user.id).values(is_admin=User.is_admin))
    db.refresh(user)
    enabled_admins = select(func.count()).where(User.is_admin.is_(True), User.disabled.is_(False))
    return int(db.scalar(enabled_admins.select_from(User)) or 0)


def _keep_an_admin(db: Session, user: User, what: str) -> None:
    """Refuse (409 `last_admin`) to `what` the last enabled administrator."""
    if user.is_admin and not user.disabled and _lock_admins(db, user) <= 1:
        raise Conflict(
            f"cannot {what} {user.username}: it is the last enabled administrator (make "
            "another user an administrator first)",
            code="last_admin",
        )


def set_password(db: Session, user: User, password: str, *, keep: str | None = None) -> int:
    """Give `user` a new password and end their sign-ins and tokens (but `keep`, the one
    the request came with when it is theirs): who knew the old one is out. How many ended.
    A password set here is chosen: the account no longer `must_change_password`."""
    check_password_rule(password)
    user.password_hash = generate_password_hash(password)
    user.must_change_password = False
    return revoke_all(db, user.id, keep=keep)


def update_user(
    db: Session,
    user_id: str,
    *,
    is_admin: bool | None = None,
    disabled: bool | None = None,
    password: str | None = None,
    keep_token: str | None = None,
    must_change_password: bool | None = None,
) -> User:
    """An administrator's change to an account (None: leave as it is). A password ends
    the account's sign-ins and tokens, except `keep_token`; disabling leaves them, refused
    while the account is disabled and valid again once it is enabled. With
    `must_change_password` (a reset: a temporary password), the user's next sign-in may do
    nothing but change it."""
    user = get_user(db, user_id)
    if is_admin is False and user.is_admin:
        _keep_an_admin(db, user, "demote")
    if disabled and not user.disabled:
        _keep_an_admin(db, user, "disable")
    if password is not None:
        set_password(db, user, password, keep=keep_token)
    if is_admin is not None:
        user.is_admin = is_admin
    if disabled is not None:
        user.disabled = disabled
    if must_change_password is not None:
        user.must_change_password = must_change_password
    db.flush()
    return user


def change_own_password(
    db: Session, throttle: Throttle, principal: Principal, current: str, new: str
) -> int:
    """A user's change of their own password: the current one must be right (wrong ones
    count as failed logins of the account, so a stolen token cannot guess it faster); ends
    every other sign-in and token of theirs, not the one of this request. How many ended."""
    user = get_user(db, principal.user_id)
    key = _account_key(user.username)
    _check_blocks(throttle, ((key, "for this account"),))
    if not check_password_hash(user.password_hash, current):
        block = throttle.fail(key, ACCOUNT_POLICY)
        later = f"; after too many failures the next try must wait {wait_text(block)}"
        raise Forbidden(
            "the current password is wrong" + (later if block else ""), code="wrong_password"
        )
    throttle.reset(key)
    return set_password(db, user, new, keep=principal.token_id or None)


def delete_user(database: Database, store: SessionStore, user_id: str, *, actor: str) -> User:
    """Delete an account and everything of it: its rows (tokens, folders, bindings, Teams
    links, responses: by the foreign keys; the session index and its text), then its files
    (sessions, images, memory, exports). One audit line says who deleted whom. The rows go
    first, in one transaction: from then on no request authenticates as the user, and an
    index rebuild skips nothing, since the files go right after. A turn that was already
    running for the user may still fail on its missing session; nothing of it is kept."""
    with database.session() as db:
        user = get_user(db, user_id)
        _keep_an_admin(db, user, "delete")
        sync.forget_user(db, user.id)
        db.execute(delete(ApiToken).where(ApiToken.user_id == user.id))
        db.delete(user)
    # SQLite: the deleted rows' text would linger in the write-ahead log until its frames
    # are reused: copied into the database (where deleted content is zeroed: shared/db's
    # `secure_delete`) and the log truncated.
    database.checkpoint()
    remove_tree(store.users_dir / user.id)
    log.warning(
        "audit: user %s (%s) deleted by %s, with their sessions, memory and files",
        user.username,
        user.id,
        actor,
    )
    return user


def _expired(row: ApiToken, now: datetime) -> bool:
    return row.expires_at is not None and row.expires_at <= now


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
        ApiToken.scopes,
        User.id,
        User.username,
        User.is_admin,
        User.disabled,
        User.must_change_password,
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


def authenticate(
    database: Database,
    tokens: TokenCache,
    token: str,
    *,
    now: datetime,
    from_cookie: bool = False,
    cached: bool = True,
) -> Principal:
    """The principal behind a bearer token (or, `from_cookie`, a browser sign-in) at `now`,
    or `Unauthorized`. Every request asks this: the lookup comes from `tokens` while its entry
    is fresh (`cached=False`: from the database, as an open socket's recheck wants), else
    from one query on a bare connection; `last_used_at` is written at most every five
    minutes."""
    key = _hash_token(token)
    found = tokens.get(key) if cached else None
    if found is None:
        stamp = tokens.stamp()
        with database.transaction() as db:
            row = db.execute(_BY_TOKEN, {"token_hash": key}).first()
        if row is None:
            tokens.drop(key)
            raise Unauthorized("invalid, expired or revoked token", code="invalid_token")
        found = tuple(row)
        tokens.put(key, found[6], found, stamp)
    token_id, source, expires_at, revoked_at, last_used_at, scopes = found[:6]
    user_id, username, is_admin, disabled, must_change = found[6:]
    if (
        revoked_at is not None
        or (expires_at is not None and expires_at <= now)
        or (source == BROWSER) != from_cookie
    ):
        raise Unauthorized("invalid, expired or revoked token", code="invalid_token")
    if disabled:
        raise Unauthorized(DISABLED_MESSAGE, code="account_disabled")
    if last_used_at is None or now - last_used_at > TOUCH_EVERY:
        stamp = tokens.stamp()
        with database.transaction() as db:
            db.execute(_TOUCH, {"token_id": token_id, "stamp": now})
        tokens.put(key, user_id, (*found[:4], now, *found[5:]), stamp)
    # A browser sign-in is the web client: what it starts is from "web", as the listing says.
    return Principal(
        user_id,
        username,
        is_admin,
        "web" if source == BROWSER else source,
        token_id,
        scopes_of(scopes),
        must_change_password=bool(must_change),
    )


def csrf_token(session_token: str) -> str:
    """The CSRF token of a browser sign-in: an HMAC keyed with the sign-in's own secret, so
    only who holds the cookie's value (the server, on each request) can compute it, and it
    tells nothing about that value."""
    return hmac.new(session_token.encode(), b"eonyx csrf v1", hashlib.sha256).hexdigest()


def csrf_matches(session_token: str, given: str) -> bool:
    """Whether `given` is the sign-in's CSRF token (compared in constant time)."""
    return hmac.compare_digest(csrf_token(session_token).encode(), given.encode())
