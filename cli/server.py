"""Server-side commands: serve, worker, users, index, db."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click
from werkzeug.serving import WSGIRequestHandler, make_server

from shared import accounts
from shared.core.errors import EonyxError
from shared.core.settings import Settings, load_settings
from shared.core.text import printable
from shared.runtime import Runtime
from shared.storage import index
from shared.storage.embedded_redis import EmbeddedRedis


@contextmanager
def server_runtime() -> Iterator[Runtime]:
    """The server's runtime for one command: the schema brought up to date, and the domain's
    errors shown as CLI errors."""
    with Runtime.build(load_settings()) as rt:
        rt.db.migrate()
        try:
            yield rt
        except EonyxError as exc:
            raise click.ClickException(printable(exc.message)) from None


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
def serve(host: str, port: int) -> None:
    """Start the API and a worker on embedded defaults (Ctrl+C stops both)."""
    settings = load_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    embedded = None
    if not settings.redis_url:
        embedded = EmbeddedRedis(settings.data_dir)
        try:
            settings = settings.with_changes(redis_url=embedded.start())
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
    worker = None
    try:
        with Runtime.build(settings) as rt:
            rt.db.migrate()
            with rt.db.session() as db:
                first_run = not accounts.list_users(db)
        if first_run:
            click.echo("No account yet: create one with `eonyx users create NAME --admin`.")
        worker = _start_worker_process(settings)
        _serve_http(settings, host, port)
    finally:
        if worker is not None:
            _stop_process(worker)
        if embedded is not None:
            embedded.stop()
    click.echo("Eonyx stopped.")


def _start_worker_process(settings: Settings) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REDIS_URL": settings.redis_url or "", "DATA_DIR": str(settings.data_dir)}
    env["DATABASE_URL"] = settings.database_url
    command = [sys.executable, "-m", "cli", "worker", "--beat", "--concurrency", "2"]
    return subprocess.Popen(command, env=env, start_new_session=True)


def _stop_process(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_QUERY = re.compile(r"\?[^\s\"']*")


class RequestLogHandler(WSGIRequestHandler):
    """werkzeug's request handler, logging each request without its query string: a
    browser's WebSocket sends its bearer token as `/api/v1/events?token=...`, and a token
    must never reach a log."""

    def log(self, type: str, message: str, *args: object) -> None:
        line = message % args if args else message
        super().log(type, "%s", _QUERY.sub("", line))


def _serve_http(settings: Settings, host: str, port: int) -> None:
    from api import create_app
    from workers.queue import celery_jobs

    app = create_app(settings, jobs_queue=celery_jobs(settings))
    server = make_server(host, port, app, threaded=True, request_handler=RequestLogHandler)
    stop = threading.Event()

    def _shutdown(signum: int, _frame: object) -> None:
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {sig: signal.signal(sig, _shutdown) for sig in (signal.SIGINT, signal.SIGTERM)}
    click.echo(f"Eonyx is running at http://{host}:{server.port} (data in {settings.data_dir})")
    click.echo("Press Ctrl+C to stop.")
    try:
        server.serve_forever()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.server_close()


@click.command()
@click.option("--beat/--no-beat", default=False, help="Also run the periodic scheduler.")
@click.option("--concurrency", type=int, default=None, help="Worker threads (default: cores).")
def worker(beat: bool, concurrency: int | None) -> None:
    """Start a background worker (needs REDIS_URL or a running `eonyx serve`)."""
    from workers.app import create_celery

    settings = load_settings()
    try:
        app = create_celery(settings)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    (settings.data_dir / "run").mkdir(parents=True, exist_ok=True)
    argv = ["worker", "--loglevel", "INFO", "--pool", "threads", "-Q", "eonyx"]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    if beat:
        argv.append("--beat")
    app.worker_main(argv)


@click.group()
def users() -> None:
    """Manage accounts."""


@users.command(
    "create",
    help=(
        "Create a user (the first one should be an --admin).\n\n"
        f"USERNAME: {accounts.USERNAME_RULE} (not case-sensitive).\n\n"
        f"Password: {accounts.PASSWORD_RULE}."
    ),
)
@click.argument("username")
@click.option("--password", help="Asked for when not given (see the rules above).")
@click.option("--admin", is_flag=True, help="Make the user an administrator.")
def users_create(username: str, password: str | None, admin: bool) -> None:
    if password is None:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with server_runtime() as rt:
        with rt.db.session() as db:
            user = accounts.create_user(db, username, password, is_admin=admin)
        click.echo(f"created {'admin' if admin else 'user'} {user.username} ({user.id})")


@users.command("list")
def users_list() -> None:
    """List the accounts."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            for user in accounts.list_users(db):
                name = printable(user.username)
                click.echo(f"{user.id}  {name}{'  (admin)' if user.is_admin else ''}")


@click.group("index")
def index_group() -> None:
    """The session index (a cache of the session files)."""


@index_group.command("rebuild")
@click.option("--drop", is_flag=True, help="Forget the whole index first and re-read every file.")
def index_rebuild(drop: bool) -> None:
    """Bring the index in line with the session files."""
    with server_runtime() as rt:
        if drop:
            with rt.db.session() as db:
                index.drop(db)
        total = sum(1 for user_id in rt.store.user_ids() for _ in rt.store.scan(user_id))
        with click.progressbar(length=total, label="Indexing sessions") as bar:
            report = index.rebuild(rt.db.session, rt.store, progress=bar.update)
        removed = f"{report.removed} stale rows removed"
        click.echo(f"{report.scanned} sessions: {report.reread} re-read, {removed}")
        if report.failed:
            click.echo(f"{len(report.failed)} not indexed (their files are kept as they are):")
            for failure in report.failed:
                click.echo(f"  {printable(failure)}")


@click.group()
def db() -> None:
    """The database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply the migrations (safe to run on every start)."""
    with server_runtime() as rt:
        click.echo(f"database at the newest schema ({_redact(rt.db.url)})")


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


COMMANDS = [serve, worker, users, index_group, db]
