"""Gunicorn settings for the Eonyx API, shared by the compose stack and `eonyx serve`.

The image runs `gunicorn -c deploy/gunicorn.conf.py`, which takes its values from here;
`eonyx serve` runs `gunicorn -c python:api.gunicorn_conf` and overrides the address, the
worker and connection counts and the graceful timeout on the command line (flags beat this
file).

gevent workers: a chat turn spends most of its time waiting on a model, and an open tab
holds its events WebSocket for hours, so neither may hold an OS thread. Each worker process
runs every connection as a greenlet on one event loop (gevent patches the standard library
at the worker's start, before the app is loaded: sockets, locks, `threading`, `time.sleep`),
and the code stays synchronous: Flask, SQLAlchemy, psycopg (3.1.14 and later wait through
gevent), redis-py and httpx run unchanged. One worker holds up to `worker_connections` open
connections; turns at once are bounded by the CPU and the model, not by a pool.

Slow clients cannot hold a worker: gunicorn reads a request's headers within `keepalive`
seconds (its gevent worker times the header read out), and the app reads a body within
REQUEST_BODY_SECONDS (api/slow_clients.py). Every value can be overridden from the
environment (see deploy/env.example).
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Mapping
from typing import Any


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise SystemExit(f"{name} must be at least 1, got {value}")
    return value


WORKER_CONNECTIONS = 10_000


def default_workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, min(cores or 1, 4))


def gunicorn_settings(environ: Mapping[str, str]) -> dict[str, object]:
    """Gunicorn's settings by name, from `environ` (SystemExit names a bad variable)."""
    settings: dict[str, object] = {
        "wsgi_app": "api.wsgi:app",
        "bind": environ.get("EONYX_BIND") or f"0.0.0.0:{_int(environ, 'PORT', 8000)}",
        "worker_class": "gevent",
        "workers": _int(environ, "WEB_CONCURRENCY", default_workers()),
        # Open connections per worker: events sockets, turns waiting on the model, idle
        # keep-alive connections. 30-60 KiB of memory each (deploy/README.md, sizing).
        "worker_connections": _int(environ, "GUNICORN_WORKER_CONNECTIONS", WORKER_CONNECTIONS),
        # A turn may wait minutes on a model (budget 300 s for a long one). The gevent worker
        # beats its heartbeat from a greenlet of its own, so a long request alone does not
        # trip `timeout`: only a loop blocked that long does. A graceful stop closes the
        # events sockets at once (post_worker_init below) and lets running turns finish for
        # about one more model call (120 s).
        "timeout": _int(environ, "GUNICORN_TIMEOUT", 360),
        "graceful_timeout": _int(environ, "GUNICORN_GRACEFUL_TIMEOUT", 120),
        # Also how long a client may take to send a request's headers.
        "keepalive": _int(environ, "GUNICORN_KEEPALIVE", 5),
        # Each worker builds its own runtime (database pool, Redis client) after the fork.
        "preload_app": False,
        "accesslog": "-",
        "errorlog": "-",
        "loglevel": environ.get("GUNICORN_LOG_LEVEL", "info"),
        # The path without its query string: a browser's WebSocket sends its bearer token as
        # `/api/v1/events?token=...`, and a token must never reach a log.
        "access_log_format": (
            '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s" %({x-request-id}o)s'
        ),
        # LOG_FORMAT (json by default) for gunicorn's own lines too (api/gunicorn_logging.py).
        "logger_class": "api.gunicorn_logging.EonyxLogger",
        # No control socket (gunicorn 25+): two servers on one machine would fight over
        # $HOME/.gunicorn/gunicorn.ctl. Signals stop and reload gunicorn as before.
        "control_socket_disable": True,
        # A worker whose arbiter was killed outright dies with it (it would otherwise serve
        # on, unsupervised, holding the port).
        "post_fork": _die_with_arbiter,
        "post_worker_init": _close_sockets_on_stop,
    }
    # Heartbeat files on a RAM disk when there is one (a container's overlay fs can stall them).
    if os.path.isdir("/dev/shm"):
        settings["worker_tmp_dir"] = "/dev/shm"
    settings |= metrics_hooks(environ)
    return settings


def _die_with_arbiter(server: object, _worker: object) -> None:
    from shared.core.lifetime import die_with_parent

    die_with_parent(getattr(server, "pid", None) or os.getppid())
    _raise_open_files_limit()


def _raise_open_files_limit() -> None:
    """Every connection is a file descriptor: the soft limit (often 1,024) goes up to the
    hard one, which is what a container or a unit file sets on purpose."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _close_sockets_on_stop(worker: Any) -> None:
    """On SIGTERM the worker stops accepting and waits for its connections to end: the open
    events sockets are closed at once (1012, so the tabs reconnect to what runs next), and
    only the running requests are waited for."""
    stop = worker.handle_exit

    def handle_exit(sig: int, frame: object) -> None:
        stop(sig, frame)
        from api.events import OPEN

        # Only wakes each socket (its own greenlet closes it): nothing here may block, as
        # gevent runs this handler in its event loop.
        OPEN.close_all()

    signal.signal(signal.SIGTERM, handle_exit)


def metrics_hooks(environ: Mapping[str, str]) -> dict[str, object]:
    """With metrics on, the worker processes share a multiprocess directory, so a scrape of
    any of them answers for all (shared/core/metrics.py): the one PROMETHEUS_MULTIPROC_DIR
    names, which whoever names it keeps empty at start-up (the compose file's is on the
    container's fresh /dev/shm; `eonyx serve` empties its own before it starts the worker
    that shares it), else a new one with a random name made here. A named one is made here
    (mode 0700) or refused, with gunicorn's exit, when another account could have planted
    it (a link, someone else's, writable by others). A worker that exits is marked dead so
    the open-sockets gauge forgets it."""
    if not (environ.get("METRICS_TOKEN") or "").strip():
        return {}

    def on_starting(_server: object) -> None:
        from shared.core import metrics

        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if directory:
            try:
                metrics.private_directory(directory)
            except (metrics.UnsafeDirectory, OSError) as exc:
                raise SystemExit(str(exc)) from None
            return
        made = metrics.new_directory()
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(made)  # the workers inherit it

    def child_exit(_server: object, worker: Any) -> None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)

    return {"on_starting": on_starting, "child_exit": child_exit}


globals().update(gunicorn_settings(os.environ))  # what `-c python:api.gunicorn_conf` reads
