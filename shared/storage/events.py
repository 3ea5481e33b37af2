"""Live events for a user's clients (titles, like status, memory writes), over Redis pub/sub.

Events are hints for what a client shows right now; the truth is always in the files and
the API, so an event published while nobody listens (or without Redis) is simply dropped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import redis

log = logging.getLogger(__name__)
CHANNEL = "eonyx:events:{user_id}"


def channel(user_id: str) -> str:
    return CHANNEL.format(user_id=user_id)


def publish(client: redis.Redis | None, user_id: str, event: dict[str, Any]) -> None:
    """Push `event` ({"type": ..., ...}) to the user's listeners; never fails the caller."""
    if client is None:
        return
    try:
        client.publish(channel(user_id), json.dumps(event, ensure_ascii=False))
    except redis.RedisError as exc:
        log.warning("could not publish a %s event: %s", event.get("type"), exc)


def listen(client: redis.Redis, user_id: str, *, poll: float = 1.0) -> Iterator[str | None]:
    """The user's events as JSON text; None every `poll` seconds of silence (so the caller
    can check that its client is still there)."""
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    try:
        pubsub.subscribe(channel(user_id))
    except (redis.RedisError, OSError) as exc:  # Redis went away before the stream began
        log.info("event stream for %s not started: %s", user_id, exc)
        pubsub.close()
        return
    try:
        while True:
            try:
                message = pubsub.get_message(timeout=poll)
            except (redis.RedisError, OSError, ValueError) as exc:  # Redis gone or shut down
                log.info("event stream for %s ended: %s", user_id, exc)
                return
            if message is None:
                yield None
            elif message.get("type") == "message":
                data = message["data"]
                yield data.decode() if isinstance(data, bytes) else str(data)
    finally:
        pubsub.close()
