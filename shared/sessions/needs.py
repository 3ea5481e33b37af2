"""What shared.sessions needs from the runtime (see shared/llm/needs.py for why): the session
files, their locks, Redis for events and the turn lock, the model client for titles, the
clock, the switches an administrator sets at run time; and what shared.llm needs."""

from __future__ import annotations

from typing import Protocol

import redis

from shared.accounts.live_settings import LiveSettings
from shared.core.clock import Clock
from shared.files.session_store import SessionStore
from shared.infra.locks import Locks
from shared.llm.client import ModelClient
from shared.llm.needs import LlmRuntime


class SessionsRuntime(LlmRuntime, Protocol):
    store: SessionStore
    locks: Locks
    redis: redis.Redis | None
    llm: ModelClient
    clock: Clock
    live_settings: LiveSettings  # read the run-time switches here, not in `settings`

    def hint(self, job: str, *args: object) -> bool:
        """Send a job that a periodic sweep would redo if lost (Runtime.hint)."""
        ...
