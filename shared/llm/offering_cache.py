"""The offerings that roles resolve to, and who may use which (`Access`), kept per process, so
a turn need not ask the database.

Every change to the catalog (`models.add_offering`, `delete_offering`, `set_role`, an
offering's allowed groups) or to the groups (shared.accounts.groups) marks its database
session; when that session commits, the process forgets what it kept and announces
the change on Redis (`registry.CATALOG_CHANNEL`). Every process hears it
(shared.infra.change_listener) and forgets what it kept too, so a lookup costs no round trip
at all. What is kept is used only while the process hears changes: without Redis, or while
its connection is lost, every lookup asks the database. A change made around this module
(SQL by hand) is seen within `MAX_AGE` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import redis
from sqlalchemy.orm import Session

from shared.accounts import groups
from shared.core import registry
from shared.db.database import Database
from shared.infra.change_listener import ChangeListener
from shared.llm.client import Offering

log = logging.getLogger(__name__)
MAX_AGE = 60.0
_CHANGED = "eonyx.catalog_changed"  # the mark in Session.info


def mark_changed(db: Session) -> None:
    """Called by every function that changes the catalog, inside its transaction."""
    db.info[_CHANGED] = True


@dataclass(frozen=True)
class Access:
    """Who may use which offering (shared.llm.access builds it): an offering missing from
    `restricted` is everyone's; `task_only` offerings serve task roles and not the chat."""

    restricted: Mapping[str, frozenset[str]]  # offering id -> the groups that may use it
    member_of: Mapping[str, frozenset[str]]  # user id -> their groups (of those above)
    task_only: frozenset[str]

    def allows(self, user_id: str, offering_id: str) -> bool:
        allowed = self.restricted.get(offering_id)
        return not allowed or bool(allowed & self.member_of.get(user_id, frozenset()))


class OfferingCache:
    def __init__(self, database: Database, client: redis.Redis | None) -> None:
        self._redis = client
        self._lock = threading.Lock()
        self._filled_at = 0.0
        self._offerings: dict[str, Offering] = {}
        self._access: Access | None = None
        self.listener = ChangeListener(
            client,
            {registry.CATALOG_CHANNEL: lambda _suffix, _data: self._forget()},
            on_reset=self._forget,
            name="catalog cache",
        )
        database.after_commit(self._committed)

    def _age(self) -> None:
        """Forget what is older than MAX_AGE (call with the lock held)."""
        now = time.monotonic()
        if now - self._filled_at > MAX_AGE:
            self._offerings.clear()
            self._access = None
            self._filled_at = now

    def access(self, load: Callable[[], Access]) -> Access:
        """Who may use which offering: what is kept, or `load()`'s (then kept)."""
        if not self.listener.live:
            return load()
        with self._lock:
            self._age()
            kept, stamp = self._access, self.listener.generation
        if kept is not None:
            return kept
        fresh = load()
        with self._lock:
            if stamp == self.listener.generation:  # no change heard meanwhile
                self._access = fresh
        return fresh

    def get(self, role: str, resolve: Callable[[], Offering]) -> Offering:
        """The offering serving `role`: the one kept, or `resolve()`'s (then kept)."""
        if not self.listener.live:
            return resolve()
        with self._lock:
            self._age()
            kept = self._offerings.get(role)
            stamp = self.listener.generation
        if kept is not None:
            return kept
        offering = resolve()
        with self._lock:
            if stamp == self.listener.generation:  # no change heard meanwhile
                self._offerings[role] = offering
        return offering

    def close(self) -> None:
        self.listener.close()

    def _forget(self) -> None:
        with self._lock:
            self._offerings.clear()
            self._access = None

    def _committed(self, session: Session) -> None:
        catalog = session.info.pop(_CHANGED, False)
        if not (session.info.pop(groups.CHANGED, False) or catalog):
            return
        self._forget()
        if self._redis is None:
            return
        try:
            self._redis.publish(registry.CATALOG_CHANNEL + "changed", "1")
        except redis.RedisError as exc:
            log.warning("other processes see the catalog change within %g s: %s", MAX_AGE, exc)
