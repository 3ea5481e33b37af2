"""Background jobs: their names, in one place, and the queue they are sent through.

The code that sends a job (`Runtime.hint`, the sweeps), the Celery task decorators
(workers/tasks.py) and the beat schedule (workers/app.py) all use these constants, so a
renamed job cannot leave a sender talking to no task.
"""

from __future__ import annotations

from typing import Protocol

INDEX_REBUILD = "eonyx.index.rebuild"
SWEEP_EMPTY_SESSIONS = "eonyx.sessions.sweep_empty"
SESSION_TITLE = "eonyx.sessions.title"
SWEEP_TITLES = "eonyx.sessions.sweep_titles"
PURGE_TRASH = "eonyx.sessions.purge_trash"
PRECOMPUTE_SUMMARY = "eonyx.sessions.precompute_summary"
EXTRACT_MEMORY = "eonyx.memory.extract"
CURATE_MEMORY = "eonyx.memory.curate"
SWEEP_MEMORY = "eonyx.memory.sweep"
TEAMS_TURN = "eonyx.teams.turn"


class JobQueue(Protocol):
    """Where background work is sent: the Celery app (workers/queue.py) in every deployment."""

    def enqueue(self, job: str, *args: object) -> str:
        """Send a job by name; returns its id."""
        ...

    def status(self, job_id: str) -> dict[str, object]:
        """{id, state, result, error} of a job sent earlier."""
        ...
