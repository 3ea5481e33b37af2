"""Gunicorn settings for the Eonyx API: `gunicorn -c deploy/gunicorn.conf.py`.

Threaded workers (gthread): a chat turn spends most of its time waiting on a model, so each
worker process serves several requests at once, and WebSockets (/events) hold a thread each.
Every value can be overridden from the environment (see deploy/env.example); flags given on
the gunicorn command line beat this file.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise SystemExit(f"{name} must be at least 1, got {value}")
    return value


def _default_workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, min(cores or 1, 4))


wsgi_app = "api.wsgi:app"

bind = os.environ.get("EONYX_BIND") or f"0.0.0.0:{_int('PORT', 8000)}"
worker_class = "gthread"
workers = _int("WEB_CONCURRENCY", _default_workers())
threads = _int("GUNICORN_THREADS", 8)

# A turn may wait minutes on a model (budget 300 s for a long one). gthread workers beat
# their heartbeat from the main loop, so a long request alone does not trip `timeout`; it
# still stays above the longest model call, so switching worker_class cannot cut turns off.
# A graceful stop lets running turns finish for about one more model call (120 s).
timeout = _int("GUNICORN_TIMEOUT", 360)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 120)
keepalive = _int("GUNICORN_KEEPALIVE", 5)

# Each worker builds its own runtime (database pool, Redis client) after the fork.
preload_app = False

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# The path without its query string: a browser's WebSocket sends its bearer token as
# `/api/v1/events?token=...`, and a token must never reach a log.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s"'

# Heartbeat files on a RAM disk when there is one (a container's overlay fs can stall them).
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"
