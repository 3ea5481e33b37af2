"""The offerings that roles resolve to, kept per process, so a turn need not ask the database.

Every change to the catalog (`models.add_offering`, `delete_offering`, `set_role`) marks its
database session; when that session commits, the process forgets what it kept and writes a
new random version to Redis (the key `registry.OFFERINGS_VERSION`). Every lookup reads that
version first (one Redis command instead of a database transaction) and uses what it kept
only while the version is the one it was kept under, so a change made by any process is
seen by all of them on their next lookup. A change made around this module (SQL by hand)
is seen within `MAX_AGE` seconds. Without Redis, or when Redis fails, every lookup asks the
database.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable

import redis
from sqlalchemy.orm import Session

from shared.core import registry
from shared.db import Database
from shared.llm.client import Offering

log = logging.getLogger(__name__)
MAX_AGE = 60.0
_CHANGED = "eonyx.catalog_changed"  # the mark in Session.info
_NEVER = object()


def mark_changed(db: Session) -> None:
    """Called by every function that changes the catalog, inside its transaction."""
    db.info[_CHANGED] = True


class OfferingCache:
    def __init__(self, database: Database, client: redis.Redis | None) -> None:
        self._redis = client
        self._lock = threading.Lock()
        self._version: object = _NEVER
        self._filled_at = 0.0
        self._offerings: dict[str, Offering] = {}
        database.after_commit(self._committed)

    def get(self, role: str, resolve: Callable[[], Offering]) -> Offering:
        """The offering serving `role`: the one kept, or `resolve()`'s (then kept)."""
        if self._redis is None:
            return resolve()
        try:
            version = self._redis.get(registry.OFFERINGS_VERSION)
        except redis.RedisError:
            return resolve()
        now = time.monotonic()
        with self._lock:
            if version != self._version or now - self._filled_at > MAX_AGE:
                self._offerings.clear()
                self._version, self._filled_at = version, now
            kept = self._offerings.get(role)
        if kept is not None:
            return kept
        offering = resolve()
        with self._lock:
            if self._version == version:  # no newer version seen meanwhile
                self._offerings[role] = offering
        return offering

    def _committed(self, session: Session) -> None:
        if not session.info.pop(_CHANGED, False):
            return
        with self._lock:
            self._offerings.clear()
            self._version = _NEVER
        if self._redis is None:
            return
        try:
            self._redis.set(registry.OFFERINGS_VERSION, secrets.token_hex(8))
        except redis.RedisError as exc:
            log.warning("other processes see the catalog change within %g s: %s", MAX_AGE, exc)
