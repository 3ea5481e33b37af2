"""The Celery app, configured for a queue that may lose jobs.

Redis delivers at least once and forgets queued jobs when it restarts without persistence.
So: a job is acknowledged only after it ran (acks_late), a worker that dies returns its job
to the queue (reject_on_worker_lost), each worker takes one job at a time (prefetch 1), the
visibility timeout is longer than the longest job, every task is idempotent, and periodic
sweeps redo whatever a lost job left undone.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from celery import Celery

from shared.core.settings import Settings
from shared.runtime import Runtime
from shared.storage.embedded_redis import find_embedded_redis

LONGEST_JOB_SECONDS = 15 * 60
QUEUE = "eonyx"


def celery_url(redis_url: str) -> str:
    """Celery spells a unix socket `redis+socket://`; everything else passes through."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


def broker_url(settings: Settings) -> str:
    url = settings.redis_url or find_embedded_redis(settings.data_dir)
    if not url:
        raise RuntimeError(
            "no Redis: set REDIS_URL, or start `eonyx serve`, which runs an embedded one"
        )
    return celery_url(url)


def create_celery(settings: Settings) -> Celery:
    url = broker_url(settings)
    app = Celery("eonyx", broker=url, backend=url, include=["workers.tasks"])
    transport = {"visibility_timeout": LONGEST_JOB_SECONDS * 2}
    app.conf.update(
        task_default_queue=QUEUE,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_time_limit=LONGEST_JOB_SECONDS,
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        result_expires=timedelta(days=1),
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        beat_schedule_filename=str(settings.data_dir / "run" / "celerybeat-schedule"),
        beat_schedule={
            "reconcile-index": {"task": "eonyx.index.rebuild", "schedule": 30 * 60},
            "sweep-empty-sessions": {"task": "eonyx.sessions.sweep_empty", "schedule": 15 * 60},
            "sweep-memory-jobs": {"task": "eonyx.memory.sweep", "schedule": 10 * 60},
        },
        timezone="UTC",
    )
    app.eonyx_settings = settings  # type: ignore[attr-defined]
    return app


_runtimes: dict[int, Runtime] = {}
_runtimes_lock = threading.Lock()


def runtime_for(app: Celery) -> Runtime:
    """The worker's runtime, built once on first use (by whichever pool thread or forked
    process runs a task first)."""
    key = id(app)
    with _runtimes_lock:
        if key not in _runtimes:
            _runtimes[key] = Runtime.build(app.eonyx_settings)  # type: ignore[attr-defined]
        return _runtimes[key]
