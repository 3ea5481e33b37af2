"""How many events sockets each user and each sign-in holds open, across every API process.

A socket is cheap (it holds no thread), but not free: memory, a file descriptor, a place in
the fan-out. So one person, or one leaked token opening sockets in a loop, may hold at most
`per_user` sockets, and one token (a browser's sign-in is one token for all its tabs) at most
`per_token`. The counts live in Redis, so they hold across processes and replicas: a sorted
set per user and per token of the sockets' ids, each scored by the time its lease ends. An
open socket renews its lease while it lives (every RECHECK of api/events.py, far below
LEASE_SECONDS); a process that dies without releasing its sockets leaves leases that run out.
A release that Redis missed (it was away: the very outage that closed the sockets) is kept
and made before the process's next claim, so tabs reconnecting after an outage are not
refused for the sockets they had before it.
"""

from __future__ import annotations

import threading
import time
import uuid

import redis

from shared.core import registry
from shared.infra.change_listener import LOST

LEASE_SECONDS = 150
USER, TOKEN = "user", "token"

# KEYS: the user's set, the token's set. ARGV: now, lease end, socket id, caps, lease.
# Returns 0 when the socket is counted, 1 (user) or 2 (token) for the cap that refuses it.
_CLAIM = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 2 end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[i], ARGV[6])
end
return 0
"""


class SocketQuota:
    def __init__(self, client: redis.Redis, *, per_user: int, per_token: int) -> None:
        self._client = client
        self.per_user = per_user
        self.per_token = per_token
        self._claim = client.register_script(_CLAIM)
        self._missed: list[tuple[str, str, str]] = []  # releases Redis did not take
        self._missed_lock = threading.Lock()

    def claim(self, user_id: str, token_id: str) -> tuple[str | None, str]:
        """(None, socket id) when a new socket may open; (USER or TOKEN, "") naming the cap
        that refuses it."""
        self._release_missed()
        socket_id = uuid.uuid4().hex
        now = time.time()
        refused = self._claim(
            keys=self._keys(user_id, token_id),
            args=[
                now,
                now + LEASE_SECONDS,
                socket_id,
                self.per_user,
                self.per_token,
                LEASE_SECONDS,
            ],
        )
        return {0: (None, socket_id), 1: (USER, ""), 2: (TOKEN, "")}[int(refused)]

    def renew(self, user_id: str, token_id: str, socket_id: str) -> None:
        until = time.time() + LEASE_SECONDS
        with self._client.pipeline(transaction=False) as pipe:
            for key in self._keys(user_id, token_id):
                pipe.zadd(key, {socket_id: until}, xx=True)
                pipe.expire(key, LEASE_SECONDS)
            pipe.execute()

    def release(self, user_id: str, token_id: str, socket_id: str) -> None:
        """Never fails: a release Redis cannot take now is made before the next claim."""
        with self._missed_lock:
            self._missed.append((user_id, token_id, socket_id))
        self._release_missed()

    def _release_missed(self) -> None:
        with self._missed_lock:
            missed, self._missed = self._missed, []
        if not missed:
            return
        try:
            with self._client.pipeline(transaction=False) as pipe:
                for user_id, token_id, socket_id in missed:
                    for key in self._keys(user_id, token_id):
                        pipe.zrem(key, socket_id)
                pipe.execute()
        except LOST:
            with self._missed_lock:
                self._missed.extend(missed)

    @staticmethod
    def _keys(user_id: str, token_id: str) -> list[str]:
        return [registry.SOCKETS_BY_USER + user_id, registry.SOCKETS_BY_TOKEN + token_id]
