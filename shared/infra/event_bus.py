"""Live events for a user's clients (titles, like status, memory writes), over Redis pub/sub.

Events are hints for what a client shows right now; the truth is always in the files and
the API, so an event published while nobody listens (or without Redis) is simply dropped.
Pub/sub carries them across processes: a worker publishes, every API process that holds one
of the user's sockets receives.

Each API process hears every user's channels over one connection (`EventHub`, on a
ChangeListener) and hands each event to the process's listeners of that user, in memory: a
thousand open sockets cost one Redis connection, not a thousand. A `Listener` is attached
only while Redis has confirmed the subscription, so from the moment its caller tells a client
it is ready every event published for the user reaches it. When the subscription ends (Redis
went away, or it was renewed and events may have been missed between) every listener ends
(`Listener.ended`) and its client reconnects, instead of hanging on a stream that is gone.

A second channel per user says that who may act as the user changed (a token revoked, a
password changed, the account disabled or deleted: `publish_auth_change`). A listener notes
it (`Listener.auth_changed`) instead of passing it on, and its socket checks its token
again at once: a revoked credential's socket closes within a second, whichever API process
or command revoked it.

A listener does not block a thread: its owner gives a `wake` callback (an event to set),
called whenever there is something to look at.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable

import redis

from shared.core import registry
from shared.core.events import LiveEvent
from shared.infra.change_listener import ChangeListener

log = logging.getLogger(__name__)
SUBSCRIBE_TIMEOUT = 5.0


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


def publish(client: redis.Redis | None, user_id: str, event: LiveEvent) -> None:
    """Push `event` to the user's listeners; never fails the caller."""
    if client is None:
        return
    try:
        client.publish(channel(user_id), json.dumps(event.as_json(), ensure_ascii=False))
    except redis.RedisError as exc:
        log.warning("could not publish a %s event: %s", event.TYPE, exc)


class Listener:
    """One consumer's view of one user's events (an events socket's)."""

    def __init__(self, user_id: str, wake: Callable[[], None]) -> None:
        self.user_id = user_id
        self.wake = wake
        self.auth_changed = False
        self.ended = False  # the stream ended: the consumer reconnects
        self._events: deque[str] = deque()

    def take(self) -> list[str]:
        """The events (JSON text) that arrived since the last call, oldest first."""
        taken: list[str] = []
        while self._events:
            taken.append(self._events.popleft())
        return taken

    def _push(self, data: str) -> None:
        self._events.append(data)
        self.wake()

    def _end(self) -> None:
        self.ended = True
        self.wake()


class EventHub:
    """Every user's events for this process: one subscription, fanned out in memory."""

    def __init__(self, client: redis.Redis) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, set[Listener]] = {}
        self._stream = ChangeListener(
            client,
            {registry.EVENTS_CHANNEL: self._event, registry.AUTH_CHANNEL: self._auth},
            on_reset=self._reset,
            name="events hub",
        )

    def attach(self, user_id: str, wake: Callable[[], None]) -> Listener:
        """A listener of the user's events, from now on (`EventsUnavailable` when Redis
        does not confirm the subscription within SUBSCRIBE_TIMEOUT)."""
        listener = Listener(user_id, wake)
        if not self._stream.wait_live(SUBSCRIBE_TIMEOUT):
            raise EventsUnavailable("cannot subscribe to live events now")
        with self._lock:
            if not self._stream.live:  # lost meanwhile (the reset ended everyone before)
                raise EventsUnavailable("the event stream ended")
            self._listeners.setdefault(user_id, set()).add(listener)
        return listener

    def detach(self, listener: Listener) -> None:
        with self._lock:
            mine = self._listeners.get(listener.user_id)
            if mine is not None:
                mine.discard(listener)
                if not mine:
                    del self._listeners[listener.user_id]

    def close(self) -> None:
        self._stream.close()

    def _mine(self, user_id: str) -> list[Listener]:
        with self._lock:
            return list(self._listeners.get(user_id, ()))

    def _event(self, user_id: str, data: bytes) -> None:
        text = data.decode()
        for listener in self._mine(user_id):
            listener._push(text)

    def _auth(self, user_id: str, _data: bytes) -> None:
        for listener in self._mine(user_id):
            listener.auth_changed = True
            listener.wake()

    def _reset(self) -> None:
        """The subscription started or ended: events may have been missed, so every
        listener ends (there are none yet at the first start)."""
        with self._lock:
            ended = [listener for mine in self._listeners.values() for listener in mine]
            self._listeners.clear()
        for listener in ended:
            listener._end()
