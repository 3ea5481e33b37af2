"""The Celery app, configured for a queue that may lose jobs.

Redis delivers at least once and forgets queued jobs when it restarts without persistence.
So: a job is acknowledged only after it ran (acks_late), a worker that dies returns its job
to the queue (reject_on_worker_lost), each worker takes one job at a time (prefetch 1), every
task is idempotent, and periodic sweeps redo whatever a lost job left undone.

A job in the hands of a worker that was SIGKILLed (or lost with its host) is handed to
another worker once the broker's visibility timeout has passed since it was delivered
(JOB_VISIBILITY_TIMEOUT_SECONDS, 120 s by default; a live worker checks every 10 s). The
sweeps, every SWEEP_SECONDS, redo lost memory and title jobs sooner: within about 50 s of
the worker's death (shared/infra/lost_jobs.py). The trade-off of a short timeout: a job
still running when it passes is delivered a second time, to another worker. That is safe,
because each job is idempotent under its lock or version check (a duplicate waits for the
running job's lock, then finds the work done), but it costs a worker thread while it waits;
raise the timeout if your jobs often run longer (a slow model, a large index rebuild).

Each worker process and each beat keeps a heartbeat in Redis (shared/infra/heartbeats.py)
while it runs; /readyz reports a missing one.

Shutdown: SIGTERM is Celery's warm shutdown: the worker takes no new job and waits for the
running ones to end (the compose stack gives it `stop_grace_period: 120s` before SIGKILL).
A second SIGTERM (or SIGQUIT) is a cold shutdown, which first gives running jobs
SOFT_SHUTDOWN_SECONDS and then hands their messages back to Redis. A job cut off by a
SIGKILL is redelivered after the visibility timeout (acks_late), and the sweeps redo it
sooner. Every job is idempotent, so running one twice is harmless.

Logging, job metrics and traces: workers/observability.py.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
from datetime import timedelta

import redis
from celery import Celery, current_app
from celery.signals import (
    beat_embedded_init,
    beat_init,
    setup_logging,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from shared.core import job_names, logs, tracing
from shared.core.lifetime import die_with_parent
from shared.core.settings import Settings
from shared.files import permissions
from shared.infra import heartbeats
from shared.infra.embedded_redis import resolve_redis_url
from shared.infra.lost_jobs import SWEEP_SECONDS
from shared.runtime import Runtime

LONGEST_JOB_SECONDS = 15 * 60
SOFT_SHUTDOWN_SECONDS = 10  # a cold shutdown's grace for running jobs before requeueing them
QUEUE = "eonyx"


def celery_url(redis_url: str) -> str:
    """Celery spells a unix socket `redis+socket://`; everything else passes through."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


class EonyxCelery(Celery):
    """The Celery app, owning the worker's runtime: built on first use by whichever pool
    thread runs a task first, forgotten in a forked child (the parent's connections are not
    the child's), and closed when the worker or its child process shuts down."""

    def __init__(self, settings: Settings, redis_url: str) -> None:
        url = celery_url(redis_url)
        include = ["workers.tasks", "workers.observability"]
        super().__init__("eonyx", broker=url, backend=url, include=include)
        self.settings = settings
        self.redis_url = redis_url
        self._runtime: Runtime | None = None
        self._runtime_lock = threading.Lock()
        self.heartbeat: heartbeats.Heartbeat | None = None

    def start_heartbeat(self, role: str, name: str) -> None:
        client = redis.Redis.from_url(self.redis_url, socket_timeout=5)
        self.heartbeat = heartbeats.Heartbeat(client, role, name).start()

    def stop_heartbeat(self) -> None:
        heartbeat, self.heartbeat = self.heartbeat, None
        if heartbeat is not None:
            heartbeat.stop()
            heartbeat.client.close()

    @property
    def runtime(self) -> Runtime:
        with self._runtime_lock:
            if self._runtime is None:
                self._runtime = Runtime.build(self.settings, redis_url=self.redis_url)
            return self._runtime

    def close_runtime(self) -> None:
        with self._runtime_lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()


@setup_logging.connect
def _configure_logging(**_: object) -> None:
    """Our format instead of Celery's (a receiver here makes Celery leave logging alone),
    without a job's arguments and result (workers/observability.py)."""
    app = current_app
    if isinstance(app, EonyxCelery):
        from workers.observability import HideJobData

        logs.configure(app.settings).addFilter(HideJobData())


@worker_init.connect
def _start_observing(sender: object = None, **_: object) -> None:
    """Metrics and traces of the worker process (before it takes a job)."""
    app = getattr(sender, "app", None)  # the sender is the WorkController
    if not isinstance(app, EonyxCelery):
        return
    settings = app.settings
    if settings.metrics_token:
        from shared.core import metrics

        recorder = metrics.enable(settings)
        if settings.metrics_port:
            from workers.observability import serve_metrics

            client = redis.Redis.from_url(app.redis_url, socket_timeout=5)
            serve_metrics(settings, lambda: recorder.render(client))
    instrument_celery(settings, "eonyx-worker")


def instrument_celery(settings: Settings, service: str) -> None:
    """Celery's spans (and the trace carried from the sender to the job), when tracing is on."""
    if tracing.start(settings, service):
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        instrumentor = CeleryInstrumentor()
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()


@worker_ready.connect
def _start_worker_heartbeat(sender: object = None, **_: object) -> None:
    app = getattr(sender, "app", None)  # the sender is the Consumer
    if isinstance(app, EonyxCelery):
        app.start_heartbeat(heartbeats.WORKER, str(getattr(sender, "hostname", os.getpid())))


@worker_shutdown.connect
def _close_worker_runtime(sender: object = None, **_: object) -> None:
    app = getattr(sender, "app", None)  # the sender is the WorkController
    if isinstance(app, EonyxCelery):
        app.stop_heartbeat()
        app.close_runtime()
        tracing.shutdown()


@beat_init.connect
def _start_beat_heartbeat(sender: object = None, **_: object) -> None:
    """Beat, standalone (`celery beat`) or inside a worker (`--beat`, its own process). A
    standalone beat removes its heartbeat at exit; an embedded one lets it expire."""
    app = getattr(sender, "app", None)  # the sender is the beat Service
    if isinstance(app, EonyxCelery):
        permissions.secure_store(app.settings)  # a standalone beat writes its schedule file
        app.start_heartbeat(heartbeats.BEAT, f"{socket.gethostname()}:{os.getpid()}")
        atexit.register(app.stop_heartbeat)


@beat_embedded_init.connect
def _die_with_worker(**_: object) -> None:
    """A worker's own beat (`--beat`) dies with it, even with a SIGKILL: a beat left
    behind would schedule everything twice beside the next worker's."""
    die_with_parent(os.getppid())


@worker_process_init.connect
def _forget_inherited_runtime(**_: object) -> None:
    """A forked pool child must not use its parent's connections: it builds its own."""
    app = current_app
    if isinstance(app, EonyxCelery):
        app._runtime = None


@worker_process_shutdown.connect
def _close_child_runtime(**_: object) -> None:
    app = current_app
    if isinstance(app, EonyxCelery):
        app.close_runtime()


def create_celery(settings: Settings) -> EonyxCelery:
    redis_url = resolve_redis_url(settings)
    if not redis_url:
        raise RuntimeError(
            "no Redis: set REDIS_URL, or start `eonyx serve`, which runs an embedded one"
        )
    app = EonyxCelery(settings, redis_url)
    # Redelivery of a dead worker's job; also kombu's lock on restoring them, so a worker
    # killed while restoring does not hold that up for the 5-minute default either.
    timeout = settings.job_visibility_timeout
    transport = {"visibility_timeout": timeout, "unacked_mutex_expire": min(timeout, 300)}
    app.conf.update(
        task_default_queue=QUEUE,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_time_limit=LONGEST_JOB_SECONDS,
        worker_prefetch_multiplier=1,
        worker_soft_shutdown_timeout=SOFT_SHUTDOWN_SECONDS,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        result_expires=timedelta(days=1),
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        # Redis that refuses a command (MISCONF: its disk is full) is retried like a lost
        # connection, instead of stopping the worker: it takes jobs again once there is room.
        broker_channel_error_retry=True,
        worker_hijack_root_logger=False,
        beat_schedule_filename=str(settings.data_dir / "run" / "celerybeat-schedule"),
        beat_schedule={
            "reconcile-index": {"task": job_names.INDEX_REBUILD, "schedule": 30 * 60},
            "sweep-empty-sessions": {"task": job_names.SWEEP_EMPTY_SESSIONS, "schedule": 15 * 60},
            "purge-trash": {"task": job_names.PURGE_TRASH, "schedule": 60 * 60},
            "sweep-memory-jobs": {"task": job_names.SWEEP_MEMORY, "schedule": SWEEP_SECONDS},
            "sweep-pending-titles": {"task": job_names.SWEEP_TITLES, "schedule": SWEEP_SECONDS},
        },
        timezone="UTC",
    )
    return app
