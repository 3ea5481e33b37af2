"""Session bindings: which session an outside conversation continues.

A Teams conversation, or the history an OpenAI-style client resends, is known to Eonyx only by
an outside identity. A binding maps (user, channel, SHA-256 of that identity) to a session.
The session file stays the truth: a binding whose session is gone is simply replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import cast

from sqlalchemy import Table, bindparam, delete, select

from shared.accounts.people import Principal
from shared.core import registry
from shared.core.clock import utcnow
from shared.db.database import Executor, upsert
from shared.db.orm import SessionBinding
from shared.integrations.needs import IntegrationsRuntime

BIND_LOCK_WAIT = 30.0
_TABLE = cast(Table, SessionBinding.__table__)
_KEY = ["user_id", "channel", "key"]
# Built once: building a statement costs as much as running it on SQLite.
_OF_KEY = (
    (_TABLE.c.user_id == bindparam("user_id"))
    & (_TABLE.c.channel == bindparam("channel"))
    & (_TABLE.c.key == bindparam("key"))
)
_LOOKUP = select(_TABLE.c.session_id).where(_OF_KEY)
_UNBIND = delete(_TABLE).where(_OF_KEY)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def lookup(rt: IntegrationsRuntime, user_id: str, channel: str, key: str) -> str | None:
    """The bound session, if it still exists (a deleted session unbinds itself)."""
    where = {"user_id": user_id, "channel": channel, "key": key}
    with rt.db.transaction() as db:  # Core: a facade request looks up on every turn
        session_id: str | None = db.execute(_LOOKUP, where).scalar()
    if session_id and rt.store.path(user_id, session_id).is_file():
        return session_id
    return None


def bind(rt: IntegrationsRuntime, user_id: str, channel: str, key: str, session_id: str) -> None:
    with rt.db.transaction() as db:
        bind_in(db, user_id, channel, key, session_id)


def bind_in(db: Executor, user_id: str, channel: str, key: str, session_id: str) -> None:
    """`bind` within the caller's transaction (one commit for it and the caller's rows)."""
    row = {
        "user_id": user_id,
        "channel": channel,
        "key": key,
        "session_id": session_id,
        "updated_at": utcnow(),
    }
    upsert(db, _TABLE, [row], _KEY)


def unbind(rt: IntegrationsRuntime, user_id: str, channel: str, key: str) -> None:
    with rt.db.transaction() as db:
        db.execute(_UNBIND, {"user_id": user_id, "channel": channel, "key": key})


def bound_session(
    rt: IntegrationsRuntime, principal: Principal, channel: str, key: str, create: Callable[[], str]
) -> tuple[str, bool]:
    """The session bound to `key`, or a new one from `create()` bound to it: (id, created).

    Under a lock, so two messages arriving together in a new conversation share one session."""
    found = lookup(rt, principal.user_id, channel, key)
    if found:
        return found, False
    with rt.locks.hold(
        f"{registry.BIND_LOCK}{principal.user_id}:{channel}:{key}", wait=BIND_LOCK_WAIT
    ):
        found = lookup(rt, principal.user_id, channel, key)
        if found:
            return found, False
        session_id = create()
        bind(rt, principal.user_id, channel, key, session_id)
        return session_id, True
