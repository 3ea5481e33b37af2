"""Recently checked tokens, kept per process and dropped the moment they may be wrong.

Every request presents a token, and looking it up cost a database transaction per request
(a fifth of a turn's CPU above the durable floor). This keeps what the lookup found, by the
token's hash, for `TTL` seconds. Whatever can make it wrong (a token revoked, a password
changed, an account disabled, demoted or deleted) is announced on the user's auth channel
after its commit (`Runtime.auth_changed`); each process hears every user's channel
(shared.infra.change_listener) and drops the user's entries when a message comes.

The cache is used only while the listener is subscribed: before Redis confirms the
subscription, after the connection is lost, and without Redis, every request asks the
database. So a revoked token stops working in every process within pub/sub's delivery time,
and at once in the process that revoked it (`auth_changed` drops its own entries first).
Expiry is checked on every request, against the entry's own `expires_at`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis

from shared.core import registry
from shared.infra.change_listener import ChangeListener

TTL = 30.0  # seconds an entry is used without asking the database again


class TokenCache:
    """Lookups by token hash (the row `accounts.authenticate` reads), for one process."""

    def __init__(self, client: redis.Redis | None, *, ttl: float = TTL) -> None:
        self._ttl = ttl
        self._entries: dict[str, tuple[float, str, Any]] = {}  # hash -> (until, user id, row)
        self._mutex = threading.Lock()
        self.listener = ChangeListener(
            client,
            {registry.AUTH_CHANNEL: lambda user_id, _data: self.forget_user(user_id)},
            on_reset=self._forget_all,
            name="token cache",
        )

    def stamp(self) -> int | None:
        """Note before reading the database: `put` keeps the row only if nothing changed
        since. None: the cache is not in use."""
        return self.listener.generation if self.listener.live else None

    def get(self, token_hash: str) -> Any | None:
        if not self.listener.live:
            return None
        entry = self._entries.get(token_hash)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[2]

    def put(self, token_hash: str, user_id: str, row: Any, stamp: int | None) -> None:
        with self._mutex:
            if stamp is not None and stamp == self.listener.generation and self.listener.live:
                self._entries[token_hash] = (time.monotonic() + self._ttl, user_id, row)

    def drop(self, token_hash: str) -> None:
        with self._mutex:
            self._entries.pop(token_hash, None)

    def forget_user(self, user_id: str) -> None:
        with self._mutex:
            for key in [k for k, entry in self._entries.items() if entry[1] == user_id]:
                del self._entries[key]

    def close(self) -> None:
        self.listener.close()

    def _forget_all(self) -> None:
        with self._mutex:
            self._entries.clear()
