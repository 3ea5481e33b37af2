"""Task functions: ids in, one domain call, a small JSON result out. All idempotent.

Each is registered by `eonyx_task`, which carries what every task repeats: the job's name
from shared/core/job_names.py, binding to Celery, the worker's runtime, and where the job ran in
its result. Every job's log line, request id and metrics come from Celery's signals
(workers/observability.py), the same for every task.
"""

from __future__ import annotations

import functools
import inspect
import os
import socket
from collections.abc import Callable
from typing import Any

from celery import Task, shared_task

from shared.core import job_names, registry
from shared.core.job_names import JobQueue
from shared.index import sync
from shared.infra.lost_jobs import JOB_LOCK_TTL
from shared.runtime import Runtime
from shared.sessions.lifecycle import sweep_empty_sessions
from workers.app import LONGEST_JOB_SECONDS, EonyxCelery
from workers.queue import CeleryJobs

Result = dict[str, object]


def _runtime(task: Task) -> Runtime:
    app = task.app
    assert isinstance(app, EonyxCelery), "tasks run on the app built by workers.app.create_celery"
    return app.runtime


def _where() -> Result:
    return {"worker": socket.gethostname(), "pid": os.getpid()}


def eonyx_task(
    name: str, *, sends_jobs: bool = False, **options: Any
) -> Callable[[Callable[..., Result]], Task]:
    """Register `run` as the task of job `name` (a constant of shared/core/job_names.py).

    `run` takes the worker's runtime, then the job's arguments (ids), and returns its small
    JSON result; the task adds where it ran (worker, pid). With `sends_jobs`, `run` also
    gets `queue=`, the worker's job queue (a sweep re-sends lost jobs through it: the
    worker's runtime sends none). `options` go to Celery as given (`ignore_result=False`
    for a result someone reads); retries are Celery's defaults, as for every task here.

    The task's signature is `run`'s without the runtime (and the queue), so Celery still
    refuses a job sent with the wrong arguments when it is sent, not when it runs."""

    def register(run: Callable[..., Result]) -> Task:
        job_parameters = [
            p for p in list(inspect.signature(run).parameters.values())[1:] if p.name != "queue"
        ]

        @functools.wraps(run)
        def task(self: Task, *args: object) -> Result:
            extra = {"queue": CeleryJobs(self.app)} if sends_jobs else {}
            return {**run(_runtime(self), *args, **extra), **_where()}

        bound = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        task.__signature__ = inspect.Signature([bound, *job_parameters])  # type: ignore[attr-defined]
        registered: Task = shared_task(name=name, bind=True, **options)(task)
        return registered

    return register


@eonyx_task(job_names.INDEX_REBUILD, ignore_result=False)
def rebuild_index(rt: Runtime) -> Result:
    """Bring the index in line with the session files (re-reads only changed files)."""
    # One at a time: a copy redelivered while the first runs waits, then finds little to do.
    with rt.locks.hold(
        registry.INDEX_REBUILD_LOCK, wait=LONGEST_JOB_SECONDS, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        report = sync.rebuild(rt.db, rt.store)
    return vars(report)


@eonyx_task(job_names.SWEEP_EMPTY_SESSIONS)
def sweep_empty(rt: Runtime) -> Result:
    """Remove sessions that never got beyond the system prompt."""
    return {"removed": sweep_empty_sessions(rt)}


@eonyx_task(job_names.SESSION_TITLE)
def session_title(rt: Runtime, user_id: str, session_id: str) -> Result:
    """Name a session from its opening exchange (SESSION_TITLE_MODE=llm)."""
    from shared.sessions.title_job import generate_title

    return generate_title(rt, user_id, session_id)


@eonyx_task(job_names.SWEEP_TITLES, sends_jobs=True)
def sweep_titles(rt: Runtime, *, queue: JobQueue) -> Result:
    """Re-send lost title jobs, and end titles pending for too long."""
    from shared.sessions.title_job import sweep_titles as sweep

    return dict(sweep(rt, queue))


@eonyx_task(job_names.PURGE_TRASH)
def purge_trash(rt: Runtime) -> Result:
    """Remove sessions that have been in the trash for 30 days."""
    from shared.sessions.lifecycle import purge_trash as purge

    return {"purged": purge(rt)}


@eonyx_task(job_names.PRECOMPUTE_SUMMARY)
def precompute_summary(rt: Runtime, user_id: str, session_id: str) -> Result:
    """Compact a session that ended a turn above 80% so its next turn need not wait."""
    from shared.chat.context import precompute_summary as compute

    return {"summarized": compute(rt, user_id, session_id)}


@eonyx_task(job_names.EXTRACT_MEMORY)
def extract_memory(rt: Runtime, user_id: str, session_id: str, upto_turn: int) -> Result:
    """Reconcile the user profile (USER.md) with a session's latest turns."""
    from shared.memory.extraction import extract_user_profile

    return extract_user_profile(rt, user_id, session_id, upto_turn).to_dict()


@eonyx_task(job_names.CURATE_MEMORY)
def curate_memory(rt: Runtime, user_id: str, session_id: str, exchange_id: str) -> Result:
    """Distill a liked turn into the agent memory (MEMORY.md)."""
    from shared.memory.curation import curate_exchange

    return curate_exchange(rt, user_id, session_id, exchange_id).to_dict()


@eonyx_task(job_names.SWEEP_MEMORY, sends_jobs=True)
def sweep_memory(rt: Runtime, *, queue: JobQueue) -> Result:
    """Re-send extraction and curation jobs that were lost (turn counts past the marker,
    likes still saving long after)."""
    from shared.memory.curation import sweep_likes
    from shared.memory.extraction import sweep_extraction

    return {"extract": sweep_extraction(rt, queue), "curate": sweep_likes(rt, queue)}


@eonyx_task(job_names.TEAMS_TURN)
def teams_turn(rt: Runtime, inbound: dict[str, object]) -> Result:
    """Answer a Teams message: run its turn and post the reply (the endpoint only queued it)."""
    from shared.integrations.teams.bot import answer

    return answer(rt, inbound)
