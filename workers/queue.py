"""`JobQueue` on Celery: what the API uses to send work to the workers."""

from __future__ import annotations

from celery import Celery
from celery.result import AsyncResult


class CeleryJobs:
    def __init__(self, app: Celery) -> None:
        self.app = app

    def enqueue(self, job: str, *args: object) -> str:
        return self.app.send_task(job, args=args).id

    def status(self, job_id: str) -> dict[str, object]:
        result = AsyncResult(job_id, app=self.app)
        state = result.state
        return {
            "id": job_id,
            "state": state,
            "result": result.result if state == "SUCCESS" else None,
            "error": str(result.result) if state == "FAILURE" else None,
        }
