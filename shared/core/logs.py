"""Log lines of every Eonyx process: JSON by default (LOG_FORMAT=text for a terminal).

Each record carries the request id it serves (`request_id`: the API request, or the request
that sent the job), and in a worker the job's `task` and `job_id`, read from the context
variables of shared/core/observability.py. Entry points call `configure` once (the WSGI
module, the Celery app, the CLI's server commands); the app factory never touches logging.
"""

from __future__ import annotations

import logging
import sys
from typing import IO

from shared.core import observability
from shared.core.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
JSON_FIELDS = "%(levelname)s %(name)s %(message)s"
RENAMED = {"levelname": "level", "name": "logger"}


class ContextFilter(logging.Filter):
    """Adds `request_id` (and in a job `task` and `job_id`) to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = observability.request_id_var.get() or "-"
        job = observability.job_var.get()
        if job is not None and not hasattr(record, "task"):
            record.task, record.job_id = job
        return True


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "text":
        return logging.Formatter(TEXT_FORMAT)
    from pythonjsonlogger.orjson import OrjsonFormatter

    # `time`: ISO 8601 in UTC with microseconds, first in every object. orjson writes
    # UTF-8 as it is, several times faster than the json module (a line per request).
    return OrjsonFormatter(JSON_FIELDS, rename_fields=RENAMED, timestamp="time")


class _EonyxHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler `configure` installed, so a second call replaces it."""


def configure(settings: Settings, stream: IO[str] | None = None) -> logging.Handler:
    """One handler on the root logger, in the settings' format and level (idempotent)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _EonyxHandler)]:
        root.removeHandler(old)
    handler = _EonyxHandler(stream or sys.stderr)
    handler.setFormatter(formatter(settings.log_format))
    handler.addFilter(ContextFilter())
    root.addHandler(handler)
    root.setLevel(settings.log_level.upper())
    # httpx logs every request at info: one line per model call, which the metrics count.
    # Shown with LOG_LEVEL=debug; a failed call is logged by the model client itself.
    quiet = logging.DEBUG if settings.log_level == "debug" else logging.WARNING
    logging.getLogger("httpx").setLevel(quiet)
    return handler
