"""What a worker tells its operators: job metrics, the request id in every job's log lines,
traces, and (with METRICS_PORT) its own /metrics.

- The API sends each job with the request id in the `eonyx_request_id` header
  (workers/queue.py); while the job runs it is the context's request id, so every log line
  of the job names the request that caused it, with the job's task and id. Jobs sent while
  a job runs (the sweeps) carry it on. Beat's jobs have none.
- Each job ends with one log line (`job finished`: task, state, ms) and, when METRICS_TOKEN
  is set, a run, its latency and any failure in the metrics, by task.
- No user text in a job's log lines: Celery's own lines (`received`, `succeeded` at INFO,
  the pool's `Apply` at DEBUG, a failure's context) name the job's arguments and result,
  which may hold a user's text (a Teams job's arguments hold the message, a title job's
  result a title made of it). `HideJobData`, on the worker's log handler, keeps the task's
  name and id and replaces the rest; the sender already sends the arguments' repr as their
  count only (workers/queue.py).
- With METRICS_PORT set (and METRICS_TOKEN), the worker serves `GET /metrics` on that port
  for `Authorization: Bearer <METRICS_TOKEN>`: a replica in its own container is scraped
  there. Processes sharing a PROMETHEUS_MULTIPROC_DIR (eonyx serve) appear in the API's
  /metrics instead, and need no port.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from celery import Task
from celery.signals import task_postrun, task_prerun

from shared.core import observability
from shared.core.settings import Settings

log = logging.getLogger(__name__)
HEADER = "eonyx_request_id"

_running: dict[str, tuple[float, AbstractContextManager[None]]] = {}
_running_lock = threading.Lock()


def request_id_of(task: Task) -> str | None:
    """The request id the job was sent with (Celery keeps custom headers on the request,
    as attributes or under `headers`, depending on the protocol)."""
    request = task.request
    found = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER)
    return found if isinstance(found, str) else None


@task_prerun.connect
def _job_started(task_id: str = "", task: Task | None = None, **_: object) -> None:
    if task is None:
        return
    context = observability.job_context(request_id_of(task), task.name, task_id)
    context.__enter__()
    with _running_lock:
        _running[task_id] = (time.perf_counter(), context)


@task_postrun.connect
def _job_finished(
    task_id: str = "", task: Task | None = None, state: str | None = None, **_: object
) -> None:
    with _running_lock:
        started, context = _running.pop(task_id, (None, None))
    try:
        if task is None or started is None:
            return
        seconds = time.perf_counter() - started
        failed = state not in ("SUCCESS", "RETRY", None)
        log.info(
            "job finished",
            extra={"state": state, "ms": round(seconds * 1000, 1)},
        )
        from shared.core import metrics

        recorder = metrics.current()
        if recorder is not None:
            recorder.job_finished(task.name, seconds, failed)
    finally:
        if context is not None:
            context.__exit__(None, None, None)


class HideJobData(logging.Filter):
    """Replaces a job's arguments and result in Celery's log records (see the module)."""

    HIDDEN = ("args", "kwargs", "return_value")
    SHOWN = "[not logged]"

    def filter(self, record: logging.LogRecord) -> bool:
        context = record.args
        if isinstance(context, dict) and any(key in context for key in self.HIDDEN):
            shown = {k: self.SHOWN if k in self.HIDDEN else v for k, v in context.items()}
            record.args = shown
            if isinstance(getattr(record, "data", None), dict):
                record.data = shown  # Celery's `extra`, which a JSON line would show
        elif record.name == "celery.pool" and str(record.msg).startswith("TaskPool: Apply"):
            record.msg, record.args = "TaskPool: Apply (arguments not logged)", ()
        return True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def metrics_app(settings: Settings, render: Callable[[], bytes]) -> Callable[..., Iterable[bytes]]:
    """A WSGI app answering `GET /metrics` for the metrics token, 401/404 otherwise."""
    expected = (settings.metrics_token or "").encode()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected):
            start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
            return [b"send 'Authorization: Bearer <METRICS_TOKEN>'\n"]
        from shared.core.metrics import CONTENT_TYPE

        start_response("200 OK", [("Content-Type", CONTENT_TYPE)])
        return [render()]

    return app


def serve_metrics(settings: Settings, render: Callable[[], bytes]) -> WSGIServer:
    """Serve the worker's /metrics on METRICS_PORT in a daemon thread."""
    assert settings.metrics_port is not None
    server = make_server(
        "0.0.0.0", settings.metrics_port, metrics_app(settings, render), handler_class=_Quiet
    )
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("metrics at http://0.0.0.0:%d/metrics", settings.metrics_port)
    return server
