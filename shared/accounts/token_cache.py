"""Recently checked tokens, kept per process and dropped the moment they may be wrong.

Every request presents a token, and looking it up cost a database transaction per request
(a fifth of a turn's CPU above the durable floor). This keeps what the lookup found, by the
token's hash, for `TTL` seconds. Whatever can make it wrong (a token revoked, a password
changed, an account disabled, demoted or deleted) is announced on the user's auth channel
after its commit (`event_bus.publish_auth_change`); one thread per process listens to every
user's channel and drops the user's entries when a message comes.

The cache is used only while that thread is subscribed: before Redis confirms the
subscription, after the connection is lost, and without Redis, every request asks the
database. So a revoked token stops working in every process within pub/sub's delivery time,
and at once in the process that revoked it (its publish drops its own entries first). Expiry
is checked on every request, against the entry's own `expires_at`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import redis

from shared.core import registry
from shared.infra.event_bus import LOST

log = logging.getLogger(__name__)
TTL = 30.0  # seconds an entry is used without asking the database again
RESUBSCRIBE_SECONDS = 1.0


class TokenCache:
    """Lookups by token hash (the row `accounts.lookup_token` returns), for one process."""

    def __init__(self, client: redis.Redis | None, *, ttl: float = TTL) -> None:
        self._client = client
        self._ttl = ttl
        self._entries: dict[str, tuple[float, str, Any]] = {}  # hash -> (until, user id, row)
        self._mutex = threading.Lock()
        self._live = False  # subscribed: the entries can be trusted
        self._stopped = threading.Event()
        self._pid = 0

    @property
    def live(self) -> bool:
        """Whether entries are used: the process listens for changes, and Redis confirmed it."""
        self._listen()
        return self._live

    def get(self, token_hash: str) -> Any | None:
        self._listen()
        if not self._live:
            return None
        entry = self._entries.get(token_hash)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[2]

    def put(self, token_hash: str, user_id: str, row: Any) -> None:
        with self._mutex:  # checked under the mutex: never stored across a lost connection
            if self._live:
                self._entries[token_hash] = (time.monotonic() + self._ttl, user_id, row)

    def drop(self, token_hash: str) -> None:
        with self._mutex:
            self._entries.pop(token_hash, None)

    def forget_user(self, user_id: str) -> None:
        with self._mutex:
            for key in [k for k, entry in self._entries.items() if entry[1] == user_id]:
                del self._entries[key]

    def close(self) -> None:
        self._stopped.set()
        self._forget_all()

    def _forget_all(self) -> None:
        with self._mutex:
            self._live = False
            self._entries.clear()

    def _listen(self) -> None:
        """Start the listening thread in this process (first use, or a forked child)."""
        if self._pid == os.getpid() or self._client is None or self._stopped.is_set():
            return
        with self._mutex:
            if self._pid == os.getpid():
                return
            self._pid, self._live = os.getpid(), False
            self._entries.clear()
        threading.Thread(target=self._run, name="token cache", daemon=True).start()

    def _run(self) -> None:
        assert self._client is not None
        while not self._stopped.is_set():
            pubsub = self._client.pubsub()
            try:
                pubsub.psubscribe(registry.AUTH_CHANNEL + "*")
                while not self._stopped.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "psubscribe":
                        with self._mutex:  # from now on no change goes unheard
                            self._entries.clear()
                            self._live = True
                    elif message["type"] == "pmessage":
                        channel = message["channel"]
                        if isinstance(channel, bytes):
                            channel = channel.decode()
                        self.forget_user(channel.removeprefix(registry.AUTH_CHANNEL))
            except LOST as exc:
                if not self._stopped.is_set():  # closing closes the connection under it
                    log.warning("token cache off until Redis answers again: %s", exc)
            finally:
                self._forget_all()
                pubsub.close()
            self._stopped.wait(RESUBSCRIBE_SECONDS)
