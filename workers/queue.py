"""`JobQueue` on Celery: what the API uses to send work to the workers."""

from __future__ import annotations

import kombu.exceptions
from celery import Celery
from celery.result import AsyncResult

from shared.core import observability
from shared.core.errors import StorageError, Unavailable
from shared.core.settings import Settings
from workers.app import create_celery, instrument_celery
from workers.observability import HEADER


class CeleryJobs:
    def __init__(self, app: Celery) -> None:
        self.app = app

    def enqueue(self, job: str, *args: object) -> str:
        """Send a job, with the request id of the request (or job) that sends it, if any.

        Its arguments may hold a user's text (a Teams job's hold the message): Celery logs
        the `argsrepr` and `kwargsrepr` sent with a job instead of the arguments, so those
        say how many there are and nothing of what they hold (workers/observability.py
        hides the result from the worker's lines)."""
        request_id = observability.current_request_id()
        headers = {HEADER: request_id} if request_id else None
        shown = {"argsrepr": hidden_arguments(args), "kwargsrepr": "{}"}
        try:
            return self.app.send_task(job, args=args, headers=headers, **shown).id
        except kombu.exceptions.OperationalError as exc:
            # Redis refuses writes when its disk is full (MISCONF) or it is a replica.
            if str(exc).startswith(("MISCONF", "READONLY")):
                raise StorageError(f"the job queue cannot write: {exc}") from exc
            raise Unavailable(f"the job queue cannot be reached: {exc}") from exc

    def status(self, job_id: str) -> dict[str, object]:
        result = AsyncResult(job_id, app=self.app)
        state = result.state
        return {
            "id": job_id,
            "state": state,
            "result": result.result if state == "SUCCESS" else None,
            "error": str(result.result) if state == "FAILURE" else None,
        }


def hidden_arguments(args: tuple[object, ...]) -> str:
    """What Celery's log lines show of a job's arguments: their count only."""
    return f"({len(args)} arguments, not logged)" if args else "()"


def celery_jobs(settings: Settings) -> CeleryJobs | None:
    """The queue an API process sends jobs to, or None when there is no Redis to reach (the
    API still answers; the calls that need a worker say so with a 503)."""
    try:
        jobs = CeleryJobs(create_celery(settings))
    except RuntimeError:
        return None
    instrument_celery(settings, "eonyx-api")  # the trace goes on into the jobs it sends
    return jobs
