"""Task functions: ids in, one domain call, a small JSON result out. All idempotent."""

from __future__ import annotations

import os
import socket

from celery import Task, shared_task

from shared import index
from shared.core import job_names, registry
from shared.infra.lost_jobs import JOB_LOCK_TTL
from shared.runtime import Runtime
from shared.sessions.service import sweep_empty_sessions
from workers.app import LONGEST_JOB_SECONDS, EonyxCelery


def _runtime(task: Task) -> Runtime:
    app = task.app
    assert isinstance(app, EonyxCelery), "tasks run on the app built by workers.app.create_celery"
    return app.runtime


def _where() -> dict[str, object]:
    return {"worker": socket.gethostname(), "pid": os.getpid()}


@shared_task(name=job_names.INDEX_REBUILD, bind=True, ignore_result=False)
def rebuild_index(self) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Bring the index in line with the session files (re-reads only changed files)."""
    rt = _runtime(self)
    # One at a time: a copy redelivered while the first runs waits, then finds little to do.
    with rt.locks.hold(
        registry.INDEX_REBUILD_LOCK, wait=LONGEST_JOB_SECONDS, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        report = index.rebuild(rt.db.session, rt.store)
    return {**vars(report), **_where()}


@shared_task(name=job_names.SWEEP_EMPTY_SESSIONS, bind=True)
def sweep_empty(self) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Remove sessions that never got beyond the system prompt."""
    return {"removed": sweep_empty_sessions(_runtime(self)), **_where()}


@shared_task(name=job_names.SESSION_TITLE, bind=True)
def session_title(self, user_id: str, session_id: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Name a session from its opening exchange (SESSION_TITLE_MODE=llm)."""
    from shared.sessions.title_job import generate_title

    return {**generate_title(_runtime(self), user_id, session_id), **_where()}


@shared_task(name=job_names.SWEEP_TITLES, bind=True)
def sweep_titles(self) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Re-send lost title jobs, and end titles pending for too long."""
    from shared.sessions.title_job import sweep_titles as sweep
    from workers.queue import CeleryJobs

    return {**sweep(_runtime(self), CeleryJobs(self.app)), **_where()}


@shared_task(name=job_names.PURGE_TRASH, bind=True)
def purge_trash(self) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Remove sessions that have been in the trash for 30 days."""
    from shared.sessions.lifecycle import purge_trash as purge

    return {"purged": purge(_runtime(self)), **_where()}


@shared_task(name=job_names.PRECOMPUTE_SUMMARY, bind=True)
def precompute_summary(self, user_id: str, session_id: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Compact a session that ended a turn above 80% so its next turn need not wait."""
    from shared.chat.context import precompute_summary as compute

    return {"summarized": compute(_runtime(self), user_id, session_id), **_where()}


@shared_task(name=job_names.EXTRACT_MEMORY, bind=True)
def extract_memory(self, user_id: str, session_id: str, upto_turn: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Reconcile the user's preference profile with a session's latest turns."""
    from shared.memory.extraction import extract_preferences

    outcome = extract_preferences(_runtime(self), user_id, session_id, upto_turn)
    return {**outcome.to_dict(), **_where()}


@shared_task(name=job_names.CURATE_MEMORY, bind=True)
def curate_memory(self, user_id: str, session_id: str, exchange_id: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Distill a liked turn into the agent memory."""
    from shared.memory.curation import curate_exchange

    outcome = curate_exchange(_runtime(self), user_id, session_id, exchange_id)
    return {**outcome.to_dict(), **_where()}


@shared_task(name=job_names.SWEEP_MEMORY, bind=True)
def sweep_memory(self) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Re-send extraction and curation jobs that were lost (turn counts past the marker,
    likes still saving long after)."""
    from shared.memory.curation import sweep_likes
    from shared.memory.extraction import sweep_extraction
    from workers.queue import CeleryJobs

    rt, jobs = _runtime(self), CeleryJobs(self.app)
    return {"extract": sweep_extraction(rt, jobs), "curate": sweep_likes(rt, jobs), **_where()}


@shared_task(name=job_names.TEAMS_TURN, bind=True)
def teams_turn(self, inbound: dict[str, object]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Answer a Teams message: run its turn and post the reply (the endpoint only queued it)."""
    from shared.integrations.teams.bot import answer

    return {**answer(_runtime(self), inbound), **_where()}
