"""Live events for a user's clients (titles, like status, memory writes), over Redis pub/sub.

Events are hints for what a client shows right now; the truth is always in the files and
the API, so an event published while nobody listens (or without Redis) is simply dropped.
Pub/sub carries them across processes: a worker publishes, every API process that holds one
of the user's sockets receives.

A listener (`Subscription`) is subscribed, and Redis has confirmed it, before its caller
tells a client it is ready; from then on every event published for the user reaches it.
It talks to Redis over a connection of its own that never retries: when Redis goes away the
stream ends at once (`EventsUnavailable`) and the client reconnects, instead of the socket
hanging in reconnect back-offs.

A second channel per user says that who may act as the user changed (a token revoked, a
password changed, the account disabled or deleted: `publish_auth_change`). A listener notes
it (`Subscription.auth_changed`) instead of passing it on, and its socket checks its token
again at once: a revoked credential's socket closes within a second, whichever API process
or command revoked it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.core import registry

log = logging.getLogger(__name__)
SUBSCRIBE_TIMEOUT = 5.0

# Everything a lost or closed Redis connection raises through redis-py.
LOST = (redis.RedisError, OSError, ValueError)


class EventsUnavailable(Exception):
    """The event stream cannot start, or has ended: Redis is unreachable or went away."""


def channel(user_id: str) -> str:
    return registry.EVENTS_CHANNEL + user_id


def auth_channel(user_id: str) -> str:
    return registry.AUTH_CHANNEL + user_id


def publish_auth_change(client: redis.Redis | None, user_id: str) -> None:
    """Tell the user's open sockets to check their tokens again now (call it after the
    change is committed); never fails the caller, whose change is already made."""
    if client is None:
        return
    try:
        client.publish(auth_channel(user_id), "changed")
    except redis.RedisError as exc:
        log.warning("could not announce a sign-in change of %s: %s", user_id, exc)


def publish(client: redis.Redis | None, user_id: str, event: dict[str, Any]) -> None:
    """Push `event` ({"type": ..., ...}) to the user's listeners; never fails the caller."""
    if client is None:
        return
    try:
        client.publish(channel(user_id), json.dumps(event, ensure_ascii=False))
    except redis.RedisError as exc:
        log.warning("could not publish a %s event: %s", event.get("type"), exc)


class Subscription:
    """One user's events, read by one consumer (an events socket).

    `with Subscription(client, user_id) as events:` returns once Redis has confirmed the
    subscription; `events.next(timeout)` gives the next event's JSON text or None after
    `timeout` seconds of silence, and raises `EventsUnavailable` when the stream ended.
    A change of the user's sign-ins sets `auth_changed` (the consumer clears it).
    """

    def __init__(self, client: redis.Redis, user_id: str) -> None:
        self.user_id = user_id
        self.auth_changed = False
        self._channels = (channel(user_id), auth_channel(user_id))
        pool = client.connection_pool
        kwargs = {**pool.connection_kwargs, "retry": Retry(NoBackoff(), 0)}
        # A pool of one connection of our own: the shared pool's retries stay as they are.
        self._pool = redis.ConnectionPool(
            connection_class=pool.connection_class, max_connections=1, **kwargs
        )
        self._pubsub = redis.Redis(connection_pool=self._pool).pubsub()

    def __enter__(self) -> Subscription:
        try:
            self._subscribe()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _subscribe(self) -> None:
        deadline = time.monotonic() + SUBSCRIBE_TIMEOUT
        confirmed = 0
        try:
            self._pubsub.subscribe(*self._channels)
            while (left := deadline - time.monotonic()) > 0:
                message = self._pubsub.get_message(timeout=left)
                if message and message.get("type") == "subscribe":
                    confirmed += 1
                    if confirmed == len(self._channels):
                        return
        except LOST as exc:
            raise EventsUnavailable(f"cannot subscribe to live events: {exc}") from exc
        raise EventsUnavailable("Redis did not confirm the subscription in time")

    def next(self, timeout: float) -> str | None:
        try:
            message = self._pubsub.get_message(timeout=timeout)
        except LOST as exc:
            log.info("event stream for %s ended: %s", self.user_id, exc)
            raise EventsUnavailable(f"the event stream ended: {exc}") from exc
        if message is None or message.get("type") != "message":
            return None
        name = message.get("channel")
        if (name.decode() if isinstance(name, bytes) else name) == self._channels[1]:
            self.auth_changed = True
            return None
        data = message["data"]
        return data.decode() if isinstance(data, bytes) else str(data)

    def close(self) -> None:
        """Drop the connection (Redis forgets the subscription with it); never raises."""
        with contextlib.suppress(*LOST):
            self._pubsub.close()
        with contextlib.suppress(*LOST):
            self._pool.disconnect()
