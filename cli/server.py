"""Server-side commands: worker, users, index, db (and serve, in cli/serve.py).

They act on the server's data: with settings of their own unset, they take those of the
running `eonyx serve` (cli/runfile.py), and each says which data directory and database it
acts on (on stderr, so that what it prints on stdout stays the same).
"""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import click
from sqlalchemy.exc import SQLAlchemyError

from cli import runfile
from cli.api_client import counted
from cli.serve import serve
from shared.accounts import people, storage
from shared.core.errors import EonyxError
from shared.core.settings import Settings, load_settings
from shared.core.text import printable
from shared.db.database import Database
from shared.files import permissions
from shared.index import sync
from shared.runtime import Runtime

SCHEMA_POLL_SECONDS = 2.0


def server_settings() -> tuple[Settings, runfile.RunningServer | None]:
    """This command's settings, completed from the running server's (see cli/runfile.py)."""
    try:
        environ, server = runfile.with_server_settings(os.environ)
    except (runfile.MaskedSetting, runfile.SeveralServers) as exc:
        raise click.ClickException(str(exc)) from None
    return load_settings(environ), server


@contextmanager
def server_runtime() -> Iterator[Runtime]:
    """The server's runtime for one command: the schema brought up to date, where it acts
    said on stderr, and the domain's errors shown as CLI errors."""
    settings, server = server_settings()
    say_where(settings, server)
    with permissions.private_files(), Runtime.build(settings) as rt:
        rt.db.migrate()
        try:
            yield rt
        except EonyxError as exc:
            raise click.ClickException(printable(exc.message)) from None


def say_where(settings: Settings, server: runfile.RunningServer | None) -> None:
    """Which data directory and database a command acts on, on stderr."""
    source = f" (settings of the server at {server.url}, pid {server.pid})" if server else ""
    click.echo(
        f"data directory {settings.data_dir}, database {_redact(settings.database_url)}{source}",
        err=True,
    )


def refuse_while_serving(server: runfile.RunningServer | None, what: str) -> None:
    """Commands that replace or move the store's data wait until nothing writes to it."""
    if server is not None:
        raise click.ClickException(
            f"the server at {server.url} (pid {server.pid}) uses this store: stop it before {what}"
        )


@click.command()
@click.option("--beat/--no-beat", default=False, help="Also run the periodic scheduler.")
@click.option("--concurrency", type=int, default=None, help="Worker threads (default: cores).")
def worker(beat: bool, concurrency: int | None) -> None:
    """Start a background worker (needs REDIS_URL or a running `eonyx serve`)."""
    from workers.app import create_celery

    settings = load_settings()
    permissions.secure_store(settings)  # the worker's pool and its beat inherit the umask
    try:
        app = create_celery(settings)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    _wait_for_schema(settings)
    (settings.data_dir / "run").mkdir(parents=True, exist_ok=True)
    argv = ["worker", "--loglevel", "INFO", "--pool", "threads", "-Q", "eonyx"]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    if beat:
        argv.append("--beat")
    app.worker_main(argv)


def _wait_for_schema(settings: Settings) -> None:
    """A worker started next to a new API waits until the API has migrated the database
    (rather than failing its first jobs on missing tables)."""
    database = Database(settings.database_url)
    said = ""
    try:
        while True:
            try:
                if database.schema_is_current():
                    return
                problem = "run `eonyx db upgrade` (the API does it when it starts)"
            except SQLAlchemyError as exc:
                problem = f"the database cannot be reached ({type(exc).__name__})"
            if problem != said:
                click.echo(f"waiting for the database schema: {problem}", err=True)
                said = problem
            time.sleep(SCHEMA_POLL_SECONDS)
    finally:
        database.dispose()


@click.group()
def users() -> None:
    """Manage accounts."""


@users.command(
    "create",
    help=(
        "Create a user (the first one should be an --admin).\n\n"
        f"USERNAME: {people.USERNAME_RULE} (not case-sensitive).\n\n"
        f"Password: {people.PASSWORD_RULE}."
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
            user = people.create_user(db, username, password, is_admin=admin)
        click.echo(f"created {'admin' if admin else 'user'} {user.username} ({user.id})")


@users.command("list")
def users_list() -> None:
    """List the accounts."""
    with server_runtime() as rt, rt.db.session() as db:
        for user in people.list_users(db):
            name = printable(user.username)
            notes = ("  (admin)" if user.is_admin else "") + (
                "  (disabled)" if user.disabled else ""
            )
            click.echo(f"{user.id}  {name}{notes}")


@users.command(
    "passwd",
    help=(
        "Set USER's password (a username or an id). Ends all of the user's sign-ins and API "
        f"keys.\n\nPassword: {people.PASSWORD_RULE}."
    ),
)
@click.argument("user")
@click.option("--password", help="Asked for when not given (see the rule above).")
def users_passwd(user: str, password: str | None) -> None:
    if password is None:
        password = click.prompt("New password", hide_input=True, confirmation_prompt=True)
    with server_runtime() as rt:
        with rt.db.session() as db:
            found = people.find_user(db, user)
            ended = people.set_password(db, found, password)
            name = printable(found.username)
        rt.auth_changed(found.id)
        click.echo(f"password of {name} changed; {counted(ended, 'sign-in or key')} ended")


@users.command("disable")
@click.argument("user")
def users_disable(user: str) -> None:
    """Disable USER (a username or an id): their tokens, sign-ins and open event sockets stop
    working at once; their data stays. `eonyx users enable` undoes it."""
    _set_disabled(user, True)


@users.command("enable")
@click.argument("user")
def users_enable(user: str) -> None:
    """Enable a disabled USER again: their API keys and unexpired sign-ins work again."""
    _set_disabled(user, False)


def _set_disabled(user: str, disabled: bool) -> None:
    with server_runtime() as rt:
        with rt.db.session() as db:
            found = people.find_user(db, user)
            people.update_user(db, found.id, disabled=disabled)
            name = printable(found.username)
        rt.auth_changed(found.id)
        click.echo(f"{'disabled' if disabled else 'enabled'} {name} ({found.id})")


@users.command("quota")
@click.argument("user")
@click.argument("size", required=False)
def users_quota(user: str, size: str | None) -> None:
    """Show USER's storage (measured from disk now) and quota; with SIZE, set the quota:
    bytes, or with a unit (500MiB, 20GiB), 0 for none, or `default` for STORAGE_QUOTA_BYTES.
    Per user, not per group."""
    quota = None if size is None or size == "default" else _bytes(size)
    with server_runtime() as rt:
        with rt.db.session() as db:
            found = people.find_user(db, user)
            name, user_id = printable(found.username), found.id
            if size is not None:
                storage.set_quota(db, found, quota)
        figures = storage.storage_usage(rt, user_id, fresh=True)
    limit = figures["quota_bytes"]
    click.echo(
        f"{name} ({user_id}): {figures['used_bytes']} bytes used of "
        + (f"{limit} bytes" if limit else "no quota")
        + ("" if size is None else " (quota set)")
    )
    for kind, used in figures["by_kind"].items():
        click.echo(f"  {kind:<15} {used}")


@users.command("budget")
@click.argument("user")
@click.argument("tokens", required=False)
def users_budget(user: str, tokens: str | None) -> None:
    """Show USER's model tokens this month (UTC) and their budget; with TOKENS, set the
    budget: tokens a month, 0 for none, or `default` for MONTHLY_TOKEN_BUDGET."""
    from shared.llm import usage as token_usage

    if tokens is not None and tokens != "default" and not tokens.isdigit():
        raise click.BadParameter(f"{tokens!r}: a number of tokens, 0, or default")
    budget = None if tokens is None or tokens == "default" else int(tokens)
    with server_runtime() as rt:
        with rt.db.session() as db:
            found = people.find_user(db, user)
            name, user_id = printable(found.username), found.id
            if tokens is not None:
                token_usage.set_budget(db, found, budget)
        month = token_usage.my_usage(rt.usage, user_id)
    limit = month["budget"]["limit"]
    click.echo(
        f"{name} ({user_id}): {month['total_tokens']} tokens in {month['month']}"
        + (f" of a budget of {limit}" if limit else ", no budget")
        + ("" if tokens is None else " (budget set)")
        + f"; resets {month['budget']['resets_at']}"
    )
    for line in month["by_offering"]:
        click.echo(
            f"  {printable(line['offering'])} {line['role']}: {line['calls']} calls, "
            f"{line['prompt_tokens']} prompt + {line['completion_tokens']} completion"
        )


UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def _bytes(text: str) -> int:
    number = text.rstrip("BbKkMmGgTtIi")
    unit = text[len(number) :].lower()
    if not number.isdigit() or unit not in UNITS:
        raise click.BadParameter(f"{text!r}: bytes, or a number with KiB, MiB, GiB or TiB")
    return int(number) * UNITS[unit]


@users.command("delete")
@click.argument("user")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def users_delete(user: str, yes: bool) -> None:
    """Delete USER (a username or an id) with all their sessions, images, memory, folders
    and tokens. This cannot be undone; the log keeps a line saying so."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            found = people.find_user(db, user)
            name, user_id = printable(found.username), found.id
        if not yes:
            click.confirm(
                f"Delete {name} ({user_id}) and all their sessions and memory?", abort=True
            )
        actor = f"the command line ({getpass.getuser()})"
        people.delete_user(rt.db, rt.store, user_id, actor=actor)
        rt.auth_changed(user_id)
        click.echo(f"deleted {name} ({user_id}) and their data")


@users.command("link")
@click.argument("username")
@click.option("--teams-aad-id", required=True, help="The Teams user's Azure AD object id.")
def users_link(username: str, teams_aad_id: str) -> None:
    """Let a Teams user chat as USERNAME (their messages run as this account)."""
    from shared.integrations.teams import links

    with server_runtime() as rt:
        with rt.db.session() as db:
            user, moved_from = links.link(db, username, teams_aad_id)
        note = f" (was linked to {moved_from})" if moved_from else ""
        click.echo(f"Teams user {teams_aad_id} now chats as {user.username}{note}")


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
                sync.drop(db)
        total = sum(1 for user_id in rt.store.user_ids() for _ in rt.store.scan(user_id))
        with click.progressbar(length=total, label="Indexing sessions") as bar:
            report = sync.rebuild(rt.db, rt.store, progress=bar.update)
        removed = f"{report.removed} stale rows removed"
        click.echo(f"{report.scanned} sessions: {report.reread} re-read, {removed}")
        if report.failed:
            click.echo(f"{len(report.failed)} not indexed (their files are kept as they are):")
            for failure in report.failed:
                click.echo(f"  {printable(failure)}")


@click.group()
def db() -> None:
    """The database: its schema, and a pilot's move to PostgreSQL."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply the migrations (safe to run on every start). The store's modes are put right
    too: the compose stack's API runs this before gunicorn."""
    with permissions.private_files():
        permissions.secure_store(server_settings()[0])
    with server_runtime() as rt:
        click.echo(f"database at the newest schema ({_redact(rt.db.url)})")


@db.command(
    "copy",
    help=(
        "Copy this pilot's SQLite database (DATABASE_URL, or --from) into a new, empty "
        "PostgreSQL database (--to). Both are brought to the newest schema; accounts, tokens, "
        "folders, the model catalog and roles, Teams links and the rest are copied in one "
        "transaction, and the session index is rebuilt there from DATA_DIR's session files. "
        "The SQLite database is left in place. Stop the server first.\n\n"
        "Then point DATABASE_URL at the PostgreSQL database (the same URL as --to) and start "
        "the server again with the same DATA_DIR.\n\n"
        "Leave the password out of --to and set PGPASSWORD instead: a command line is "
        "visible to everyone on the host."
    ),
)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="URL",
    help="The empty PostgreSQL database: postgresql+psycopg://USER@HOST:5432/NAME",
)
@click.option("--from", "source", metavar="URL", help="The SQLite database (default DATABASE_URL).")
def db_copy(target: str, source: str | None) -> None:
    from shared.backup.copy import copy_database

    settings, server = server_settings()
    refuse_while_serving(server, "copying its database")
    source = source or settings.database_url
    click.echo(
        f"data directory {settings.data_dir}: {_redact(source)} -> {_redact(target)}", err=True
    )
    try:
        with permissions.private_files():
            report = copy_database(source, target, settings.data_dir)
    except EonyxError as exc:
        raise click.ClickException(printable(exc.message)) from None
    for table, count in report.rows.items():
        click.echo(f"{table}: {counted(count, 'row')}")
    click.echo(f"session index rebuilt from the files: {counted(report.index.scanned, 'session')}")
    for failure in report.index.failed:
        click.echo(f"  not indexed: {printable(failure)}")
    click.echo(f"now set DATABASE_URL={_redact(target)} and start the server")


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


COMMANDS = [serve, worker, users, index_group, db]
