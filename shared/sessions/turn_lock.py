"""The lock that serialises the turns of one session, across processes and hosts.

A turn holds it from saving the user's message to saving the answer; summary precomputation
(the worker) and a clear take it too. How long that is depends on the model, so the lock
lives TTL seconds and a thread renews it while the holder lives (`keepalive`). A replica or
worker killed mid-turn (OOM, a lost host, `docker kill`) stops renewing, and the session is
usable again at most TTL seconds later: the user's message it saved stays in the file,
unanswered, and a retry answers it. With file locks (no Redis) the kernel releases the lock
as soon as the holder dies.

A holder stalled for longer than TTL (a stopped process, Redis unreachable for that long)
loses the lock: a turn that then runs beside it may interleave its records with the other's,
each record whole (appends are atomic lines under the session file's own lock).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from shared.core import registry
from shared.sessions.needs import SessionsRuntime

TTL = 30.0  # seconds a dead holder's lock outlives it (renewed every TTL/3 while it lives)
WAIT = 5 * 60  # a turn waits this long for the session's previous turn before giving up


def hold_turn_lock(
    rt: SessionsRuntime, session_id: str, *, wait: float = WAIT
) -> AbstractContextManager[None]:
    """The session's turn lock, kept alive while held; Conflict `busy` after `wait`."""
    return rt.locks.hold(registry.TURN_LOCK + session_id, wait=wait, ttl=TTL, keepalive=True)
