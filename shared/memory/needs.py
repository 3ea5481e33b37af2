"""What shared.memory needs from the runtime (see shared/llm/needs.py for why): the memory
files and the job queue for its background work; and what shared.sessions needs."""

from __future__ import annotations

from typing import Protocol

from shared.core.job_names import JobQueue
from shared.memory.files import MemoryStore
from shared.sessions.needs import SessionsRuntime


class MemoryRuntime(SessionsRuntime, Protocol):
    memory: MemoryStore
    jobs: JobQueue | None
