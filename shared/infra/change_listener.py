"""Changes announced over Redis pub/sub, heard by one thread per process, for its caches.

A cache of data that other processes change (the tokens a request presents, the model
catalog), or the process's events sockets (shared/infra/event_bus.py), listen to every
channel under one or more prefixes over one connection, and trust what they hold only
while they can hear every change: `live` is true once Redis
has confirmed the subscription, and false again as soon as the connection is lost (then the
listener resubscribes every second). Without Redis it is never live, and the cache asks its
source every time.

`generation` grows with every change heard and every (re)subscription, before the cache is
told. A cache notes it before reading its source and keeps what it read only if it has not
moved meanwhile, so a read that a change overtook is never kept.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping

import redis

log = logging.getLogger(__name__)
# Everything a lost or closed Redis connection raises through redis-py.
LOST = (redis.RedisError, OSError, ValueError)
RESUBSCRIBE_SECONDS = 1.0


OnChange = Callable[[str, bytes], None]  # (the channel's suffix, the message's data)


class ChangeListener:
    """Hears the channels under each prefix of `handlers`: `handler(suffix, data)` for a
    message on `<prefix><suffix>`, `on_reset()` when the subscription starts or ends (forget
    all)."""

    def __init__(
        self,
        client: redis.Redis | None,
        handlers: Mapping[str, OnChange],
        *,
        on_reset: Callable[[], None],
        name: str,
    ) -> None:
        self._client = client
        self._handlers = dict(handlers)
        self._on_reset = on_reset
        self._name = name
        self._live = False
        self._live_changed = threading.Condition()
        self.generation = 0
        self._stopped = threading.Event()
        self._pid = 0
        self._starting = threading.Lock()

    @property
    def live(self) -> bool:
        """Whether every change is heard now (starts the thread in this process if needed)."""
        if self._pid != os.getpid():
            self._start()
        return self._live

    def wait_live(self, timeout: float) -> bool:
        """Whether every change is heard, waiting up to `timeout` seconds for it."""
        if self.live:
            return True
        with self._live_changed:
            return self._live_changed.wait_for(lambda: self._live, timeout)

    def close(self) -> None:
        self._stopped.set()
        self._reset(live=False)

    def _start(self) -> None:
        if self._client is None or self._stopped.is_set():
            return
        with self._starting:
            if self._pid == os.getpid():  # another thread started it meanwhile
                return
            self._pid, self._live = os.getpid(), False  # a forked child hears nothing yet
            threading.Thread(target=self._run, name=self._name, daemon=True).start()

    def _reset(self, *, live: bool) -> None:
        self._live = False
        self.generation += 1
        self._on_reset()
        with self._live_changed:
            self._live = live
            self._live_changed.notify_all()

    def _hear(self, message: Mapping[str, object]) -> None:
        """One message of redis-py's pattern subscription (`channel` and `data` as bytes)."""
        channel = message["channel"]
        if isinstance(channel, bytes):
            channel = channel.decode()
        if not isinstance(channel, str):
            return
        data = message["data"]
        for prefix, handler in self._handlers.items():
            if channel.startswith(prefix):
                self.generation += 1
                handler(channel.removeprefix(prefix), data if isinstance(data, bytes) else b"")
                return

    def _run(self) -> None:
        assert self._client is not None
        said_off = False  # one warning per outage, not one per retry
        while not self._stopped.is_set():
            pubsub = self._client.pubsub()
            try:
                pubsub.psubscribe(*(prefix + "*" for prefix in self._handlers))
                confirmed = 0
                while not self._stopped.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "psubscribe":
                        confirmed += 1
                        if confirmed % len(self._handlers) == 0:
                            self._reset(live=True)  # from now on no change goes unheard
                        else:  # a (re)subscription under way: not every prefix is heard
                            self._live = False
                        if said_off:
                            log.warning("%s on again", self._name)
                            said_off = False
                    elif message["type"] == "pmessage":
                        self._hear(message)
            except LOST as exc:
                # Closing closes the connection under it: nothing to say then.
                if not self._stopped.is_set() and not said_off:
                    log.warning("%s off until Redis answers again: %s", self._name, exc)
                    said_off = True
            finally:
                self._reset(live=False)
                pubsub.close()
            self._stopped.wait(RESUBSCRIBE_SECONDS)
