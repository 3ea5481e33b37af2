"""`eonyx serve`: the whole of Eonyx in one command, on embedded defaults.

It binds the HTTP port first (a port in use is the first thing said), then starts an embedded
Redis under DATA_DIR (unless REDIS_URL is set), brings the database schema up to date, and
starts two children, each in a process group of its own (cli/processes.py):

- the worker with the beat scheduler (`eonyx worker --beat`), supervised: when it dies its
  whole group is killed (its beat too) and it is started again after 1, 2, 4 ... 30 s;
- the HTTP server: gunicorn with the compose stack's gevent configuration
  (api/gunicorn_conf.py) on the socket bound here, or with `--dev` werkzeug's reloading
  development server (cli/devserver.py).

Once /healthz answers it prints the URL and writes its settings to DATA_DIR/run
(cli/runfile.py). Every process it starts, and each of theirs, dies with its parent (a
parent-death signal, shared/core/lifetime.py): a serve killed outright (SIGKILL, the OOM
killer) leaves nothing running, and the next start removes the run files it left
(cli/leftovers.py), or names what still runs if anything does. Ctrl+C or SIGTERM stops the
HTTP server (running requests get GRACEFUL_SECONDS), then the worker's group (SIGTERM,
SIGKILL after WORKER_GRACE_SECONDS), then the Redis; a second Ctrl+C stops at once. If the
HTTP server or the embedded Redis dies, everything is stopped and serve exits with status 1.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import click
import httpx

from cli import leftovers, runfile
from cli.processes import Child, Supervised, describe_exit
from shared.accounts import people
from shared.core.settings import Settings, load_settings
from shared.files import permissions
from shared.infra.embedded_redis import EmbeddedRedis
from shared.runtime import Runtime

GRACEFUL_SECONDS = 10  # running requests at Ctrl+C (the compose stack gives them 120 s)
WORKER_GRACE_SECONDS = 20
START_SECONDS = 60.0
WORKER_THREADS = 2
HTTP_WORKERS = 2  # a team on one machine (see the options' help)


class Stopped(Exception):
    """Ctrl+C (or SIGTERM) while starting."""


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--workers",
    default=HTTP_WORKERS,
    show_default=True,
    type=click.IntRange(1),
    help="HTTP worker processes (gunicorn).",
)
@click.option(
    "--connections",
    type=click.IntRange(1),
    help="Open connections per HTTP worker: open tabs' events sockets, turns, idle clients "
    "(default: GUNICORN_WORKER_CONNECTIONS, else api/gunicorn_conf.py's 10,000).",
)
@click.option(
    "--dev", is_flag=True, help="werkzeug's development server, reloading on code changes."
)
def serve(host: str, port: int, workers: int, connections: int | None, dev: bool) -> None:
    """Start the API and a worker on embedded defaults (Ctrl+C stops both)."""
    settings = load_settings()
    permissions.secure_store(settings)  # before anything is written; the children inherit it
    try:
        cleared = leftovers.clear(settings.data_dir)
    except leftovers.StillRunning as exc:
        raise click.ClickException(str(exc)) from None
    if cleared is not None:
        _say(f"removed what a server that was killed (pid {cleared.pid}) left: run files")
    stop, force = threading.Event(), threading.Event()
    with _signals(stop, force), _listening(host, port) as listener:
        port = listener.getsockname()[1]
        settings, embedded = _with_redis(settings)
        written: list[Path] = []
        worker = http = None
        made: Path | None = None  # the metrics directory made here, removed at the end
        try:
            _prepare_database(settings)
            env, made = _child_env(settings)
            worker = Supervised(Child("worker", _worker_argv(), env), _say)
            worker.start()
            http = _http_child(listener, host, port, env, workers, connections, dev)
            url = f"http://{_url_host(host)}:{port}"
            _wait_until_answering(url, http, stop)
            record = partial(_record, settings, url, (http, worker.child, embedded))
            written = record()
            click.echo(f"Eonyx is running at {url} (data in {settings.data_dir})")
            click.echo("Press Ctrl+C to stop.")
            problem = _supervise(worker, http, embedded, stop, record)
        except Stopped:
            problem = None
        finally:
            runfile.remove(written)
            for child, grace in ((http, GRACEFUL_SECONDS + 5), (worker, WORKER_GRACE_SECONDS)):
                if child is not None:
                    child.stop(grace, force)
            if embedded is not None:
                embedded.stop()
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
    if problem:
        raise click.ClickException(f"{problem}; Eonyx stopped.")
    click.echo("Eonyx stopped.")


def _with_redis(settings: Settings) -> tuple[Settings, EmbeddedRedis | None]:
    """The settings with a Redis to use: REDIS_URL's, or an embedded one started here."""
    if settings.redis_url:
        return settings, None
    embedded = EmbeddedRedis(settings.data_dir)
    try:
        return settings.with_changes(redis_url=embedded.start()), embedded
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None


def _http_child(
    listener: socket.socket,
    host: str,
    port: int,
    env: dict[str, str],
    workers: int,
    connections: int | None,
    dev: bool,
) -> Child:
    """The HTTP server, started on the listening socket (gunicorn inherits it; the
    development server binds the port again itself, and again on each reload)."""
    if dev:
        listener.close()
        http = Child("HTTP server", _dev_argv(host, port), env)
    else:
        argv = _gunicorn_argv(listener.fileno(), workers, connections)
        http = Child("HTTP server", argv, env, pass_fds=[listener.fileno()])
    http.start()
    listener.close()
    return http


def _record(
    settings: Settings, url: str, children: tuple[Child, Child, EmbeddedRedis | None]
) -> list[Path]:
    """The run file, for commands to find this server; none on a full disk (they will
    need DATA_DIR then, no more)."""
    try:
        return runfile.write(settings, url, _groups(children))
    except OSError as exc:
        _say(f"cannot write the run file: {exc.strerror or exc}")
        return []


def _say(message: str) -> None:
    click.echo(f"eonyx serve: {message}", err=True)


@contextmanager
def _signals(stop: threading.Event, force: threading.Event) -> Iterator[None]:
    """Ctrl+C and SIGTERM ask to stop; a second one asks to stop now."""

    def handle(_signum: int, _frame: object) -> None:
        if stop.is_set():
            force.set()
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """The HTTP socket, bound and listening before anything else starts."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from None
    with listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(address)
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        listener.listen(2048)
        listener.set_inheritable(True)
        yield listener


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _prepare_database(settings: Settings) -> None:
    with Runtime.build(settings) as rt:
        rt.db.migrate()
        with rt.db.session() as db:
            first_run = not people.list_users(db)
    if first_run:
        click.echo("No account yet: create one with `eonyx users create NAME --admin`.")


def _child_env(settings: Settings) -> tuple[dict[str, str], Path | None]:
    """The children's environment, and the metrics directory made for them, if one was."""
    env = {**os.environ, "DATA_DIR": str(settings.data_dir)}
    env |= {"REDIS_URL": settings.redis_url or "", "DATABASE_URL": settings.database_url}
    made = None
    if settings.metrics_token:
        # The HTTP workers and the background worker sum their metrics in one directory,
        # so /metrics shows the jobs too. A fresh one with a random name (mode 0700, on the
        # RAM disk when there is one: shared/core/metrics.py), removed when serve stops; or
        # the one PROMETHEUS_MULTIPROC_DIR names, if it is safe, emptied before anyone
        # writes to it.
        from shared.core import metrics

        directory = settings.prometheus_multiproc_dir
        try:
            if directory is None:
                directory = made = metrics.new_directory()
            else:
                metrics.empty_directory(directory)
        except (metrics.UnsafeDirectory, OSError) as exc:
            raise click.ClickException(str(exc)) from None
        env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return env, made


def _worker_argv() -> list[str]:
    concurrency = str(WORKER_THREADS)
    return [sys.executable, "-m", "cli", "worker", "--beat", "--concurrency", concurrency]


def _gunicorn_argv(fd: int, workers: int, connections: int | None) -> list[str]:
    return [
        *(sys.executable, "-m", "gunicorn", "--config", "python:api.gunicorn_conf"),
        *("--bind", f"fd://{fd}", "--workers", str(workers)),
        *(("--worker-connections", str(connections)) if connections else ()),
        *("--graceful-timeout", str(GRACEFUL_SECONDS)),
    ]


def _dev_argv(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "cli.devserver", host, str(port)]


def _wait_until_answering(url: str, http: Child, stop: threading.Event) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if stop.is_set():
            raise Stopped
        code = http.exit_code()
        if code is not None:
            raise click.ClickException(f"the HTTP server {describe_exit(code)} at start")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        stop.wait(0.1)
    raise click.ClickException(f"the HTTP server did not answer at {url} in time")


def _groups(children: tuple[Child, Child, EmbeddedRedis | None]) -> dict[str, int]:
    """The children's process groups (each leads its own), for the run file: a later start
    names what a killed serve left running."""
    http, worker, embedded = children
    groups = {"HTTP server": http.pid, "worker": worker.pid}
    if embedded is not None and embedded.process is not None:
        groups["embedded Redis"] = embedded.process.pid
    return {name: pid for name, pid in groups.items() if pid}


def _supervise(
    worker: Supervised,
    http: Child,
    embedded: EmbeddedRedis | None,
    stop: threading.Event,
    record: Callable[[], object],
) -> str | None:
    """Until Ctrl+C: restart the worker when it dies (and record its new process group).
    Returns why serve must stop, if it is not Ctrl+C."""
    while not stop.wait(0.25):
        before = worker.child.pid
        worker.check()
        if worker.child.pid != before:
            record()
        code = http.exit_code()
        if code is not None:
            return f"the HTTP server {describe_exit(code)}"
        if embedded is not None and embedded.process and embedded.process.poll() is not None:
            return f"the embedded Redis {describe_exit(embedded.process.returncode)}"
    return None
