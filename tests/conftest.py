"""Fixtures: every backend-dependent test runs twice, on the embedded defaults (SQLite + an
embedded Redis) and on the real services (PostgreSQL + Redis at 127.0.0.1).

Without the real services a developer's run skips those cases with the reason; in CI
(CI=true) their absence is a failure, never a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import text

from api.app import create_app
from api.context import runtime_of
from shared.accounts import people
from shared.core.settings import Settings, load_settings
from shared.db.database import Database
from shared.infra.embedded_redis import EmbeddedRedis
from shared.runtime import Runtime
from tests.fake_llm import fake_llm
from workers.queue import celery_jobs

__all__ = ["fake_llm"]  # a fixture for every test module

IN_CI = os.environ.get("CI", "").lower() == "true"
PG_URL = os.environ.get("EONYX_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def redis_for_this_process(url: str) -> str:
    """`url` for the first (or only) pytest process; under pytest-xdist, worker gwN moves
    N*2 databases up, so each process flushes its own databases (13 and 12 by default,
    then 15 and 14)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    offset = 2 * int(worker.removeprefix("gw") or 0)
    if not offset:
        return url
    base, _, number = url.rpartition("/")
    moved = int(number) + offset
    if moved > 15:
        raise pytest.UsageError(f"no Redis database {moved} for xdist worker {worker}")
    return f"{base}/{moved}"


REDIS_URL = redis_for_this_process(os.environ.get("EONYX_TEST_REDIS", "redis://127.0.0.1:6379/13"))
TABLES = (
    "index_state",
    "session_index",
    "folders",
    "device_ui_state",
    "session_moves",
    "session_text",
    "tokens",
    "users",
    "model_roles",
    "model_offerings",
    "teams_user_links",
    "session_bindings",
    "groups",
    "deployment_settings",
)


def _services_problem() -> str | None:
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"PostgreSQL at {PG_URL} is not reachable ({type(exc).__name__})"
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=3).ping()
    except redis.RedisError as exc:
        return f"Redis at {REDIS_URL} is not reachable ({type(exc).__name__})"
    return None


@pytest.fixture(scope="session")
def services_problem() -> str | None:
    return _services_problem()


def need_services(problem: str | None) -> None:
    if problem:
        if IN_CI:
            pytest.fail(f"CI needs the real services: {problem}")
        pytest.skip(f"real services unavailable: {problem}")


@pytest.fixture
def services(services_problem: str | None) -> None:
    """Use in tests that only make sense against the real PostgreSQL and Redis."""
    need_services(services_problem)


@dataclass
class Backend:
    name: str
    database_url: str
    redis_url: str


@pytest.fixture(scope="session")
def embedded_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("embedded-redis"))
    yield server.start()
    server.stop()


@pytest.fixture(scope="session")
def postgres_schema(services_problem: str | None) -> Iterator[str]:
    """A private schema for this test run, migrated once; dropped at the end."""
    need_services(services_problem)
    schema = f"eonyx_test_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    url += ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    database = Database(url)
    database.migrate()
    database.dispose()
    yield url
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["embedded", "services"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "embedded":
        redis_url = request.getfixturevalue("embedded_redis")
        db_url = f"sqlite:///{tmp_path / 'eonyx.db'}"
    else:
        db_url = request.getfixturevalue("postgres_schema")
        redis_url = REDIS_URL
        database = Database(db_url)
        with database.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {', '.join(TABLES)} CASCADE"))
        database.dispose()
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.close()
    return Backend(request.param, db_url, redis_url)


def make_settings(data_dir: Path, backend: Backend | None = None, **env: str) -> Settings:
    values = {"DATA_DIR": str(data_dir), "HOME": str(data_dir.parent)}
    if backend:
        values |= {"DATABASE_URL": backend.database_url, "REDIS_URL": backend.redis_url}
    return load_settings(values | env)


@pytest.fixture
def settings(tmp_path: Path, backend: Backend) -> Settings:
    return make_settings(tmp_path / "data", backend)


@pytest.fixture
def app(settings: Settings) -> Iterator[Flask]:
    application = create_app(settings, jobs_queue=celery_jobs(settings))
    runtime(application).db.migrate()
    yield application
    runtime(application).close()


def runtime(app: Flask) -> Runtime:
    return runtime_of(app)


@pytest.fixture
def rt(app: Flask) -> Runtime:
    return runtime(app)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@dataclass
class MovedClock:
    """The machine's clock moved by `offset`: a test moves a runtime's time by giving it one
    (`rt.clock = MovedClock(timedelta(days=2))`)."""

    offset: timedelta

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


@dataclass
class Account:
    user_id: str
    username: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def create_account(
    rt: Runtime, username: str, *, admin: bool = False, api: bool = False
) -> Account:
    """A user and a token for them: a login token (source web) or an API key (source api)."""

    with rt.db.session() as db:
        user = people.create_user(db, username, "correct horse", is_admin=admin)
        if api:
            principal = people.Principal(user.id, user.username, admin, "web", "")
            _, token = people.create_api_key(db, principal, "tests")
        else:
            _, token = people.login(db, username, "correct horse", timedelta(hours=1))
    return Account(user.id, username, token)


@pytest.fixture
def alice(rt: Runtime) -> Account:
    return create_account(rt, "alice")


@pytest.fixture
def bob(rt: Runtime) -> Account:
    return create_account(rt, "bob")


@pytest.fixture
def admin(rt: Runtime) -> Account:
    return create_account(rt, "root", admin=True)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def eonyx_executable() -> str:
    found = shutil.which("eonyx")
    if not found:
        pytest.fail("the eonyx command is not installed: run `make test`, which installs it")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# What a user would call their data: every row but the index's bookkeeping (a listing may
# rebuild a user's index state), and every file of the store.
STORED_TABLES = tuple(t for t in TABLES if t not in ("index_state", "session_moves")) + (
    "api_responses",
)


def stored(rt: Runtime) -> dict[str, Any]:
    """A snapshot of what the store holds (row counts, and every file under DATA_DIR with its
    size, the database's own files aside): equal before and after a refused request when
    nothing was saved."""
    with rt.db.session() as db:
        rows = {t: db.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in STORED_TABLES}
    data_dir = rt.settings.data_dir
    files = {
        str(path.relative_to(data_dir)): path.stat().st_size
        for path in sorted(data_dir.rglob("*"))
        if path.is_file() and path.parts[len(data_dir.parts)] in ("users", ".agent")
    }
    return {"rows": rows, "files": files}


class OwnRedis:
    """A redis-server of a test's own, to stop and start again on the same port."""

    def __init__(self, directory: Path) -> None:
        self.port, self.directory = free_port(), directory
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, cwd=self.directory, stdout=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        wait_for(lambda: _answers(client), 10, "redis-server")
        client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    server.start()
    yield server
    server.stop()
