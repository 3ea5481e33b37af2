"""The production shape on the real services: gunicorn with deploy/gunicorn.conf.py and a
separate `eonyx worker` process, sharing one DATA_DIR, PostgreSQL and Redis.

Jobs sent by the API run in the worker process; the index is a cache that a rebuild job
restores from the session files alone.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock
import httpx
import pytest
import redis
import yaml
from sqlalchemy import func, select, text

from shared.db.database import Database
from shared.db.orm import IndexState, SessionRow
from shared.files.session_store import SessionStore
from shared.index import sync
from tests.conftest import TABLES, eonyx_executable, free_port, redis_for_this_process, wait_for
from tests.fake_botframework import USER_AAD_ID, FakeBotFramework, Post, fake_botframework
from tests.fake_llm import FakeLLM

__all__ = ["fake_botframework"]

pytestmark = [pytest.mark.slow, pytest.mark.services]

ROOT = Path(__file__).resolve().parents[2]
WORKER_REDIS = redis_for_this_process(
    os.environ.get("EONYX_TEST_WORKER_REDIS", "redis://127.0.0.1:6379/12")
)
START_TIMEOUT = 60.0
JOB_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
PASSWORD = "pa55word"


def children_of(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


@dataclass
class Proc:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def check_running(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"{self.name} exited with {self.process.returncode}:\n{self.output()}")

    def stop(self) -> int:
        """SIGTERM (a graceful stop for gunicorn and celery), then SIGKILL after a while."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode


class Stack:
    """Processes started by a test, all stopped at the end whatever happens."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.procs: list[Proc] = []

    def start(self, name: str, argv: list[str], **env: str) -> Proc:
        log = self.logs / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=self.env | env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, process, log)
        self.procs.append(proc)
        return proc

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [eonyx_executable(), *args],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"eonyx {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()


@pytest.fixture
def stack(postgres_schema: str, tmp_path: Path) -> Iterator[Stack]:
    # One run at a time per machine: two runs' workers would take each other's jobs.
    guard = filelock.FileLock(Path(tempfile.gettempdir()) / "eonyx-test-worker-processes.lock")
    with guard.acquire(timeout=300):
        database = Database(postgres_schema)
        with database.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {', '.join(TABLES)} CASCADE"))
        database.dispose()
        client = redis.Redis.from_url(WORKER_REDIS)
        client.flushdb()
        client.close()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("XDG_DATA_HOME", "EONYX_URL", "EONYX_TOKEN", "GUNICORN_CMD_ARGS")
        }
        (tmp_path / "home").mkdir()
        (tmp_path / "logs").mkdir()
        env |= {
            "DATA_DIR": str(tmp_path / "data"),
            "HOME": str(tmp_path / "home"),
            "DATABASE_URL": postgres_schema,
            "REDIS_URL": WORKER_REDIS,
            "PYTHONUNBUFFERED": "1",
        }
        running = Stack(env, tmp_path / "logs")
        try:
            yield running
        finally:
            running.stop_all()


def start_api(stack: Stack, name: str = "gunicorn") -> tuple[Proc, str]:
    port = free_port()
    api = stack.start(
        name,
        ["gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py")],
        EONYX_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="2",
        GUNICORN_THREADS="4",
    )
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        api.check_running()
        try:
            return httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(answering, START_TIMEOUT, f"gunicorn to answer /healthz:\n{api.output()}")
    return api, url


def wait_for_job(http: httpx.Client, job_id: str, worker: Proc) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        worker.check_running()
        response = http.get(f"/api/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        job = response.json()
        assert job["state"] not in ("FAILURE", "REVOKED"), f"{job}\n{worker.output()}"
        return job["result"] if job["state"] == "SUCCESS" else None

    return wait_for(finished, JOB_TIMEOUT, f"job {job_id}")


def rebuild(http: httpx.Client, worker: Proc) -> dict[str, Any]:
    queued = http.post("/api/v1/index/rebuild")
    assert queued.status_code == 202, queued.text
    return wait_for_job(http, queued.json()["id"], worker)


def index_rows(database: Database, user_id: str) -> tuple[int, bool]:
    with database.session() as db:
        count = db.scalar(select(func.count()).where(SessionRow.user_id == user_id))
        return count or 0, db.get(IndexState, user_id) is not None


def test_api_jobs_run_in_the_separate_worker_and_rebuild_a_dropped_index(stack: Stack) -> None:
    assert "newest schema" in stack.run("db", "upgrade")
    assert "created admin admin" in stack.run(
        "users", "create", "admin", "--password", PASSWORD, "--admin"
    )
    worker = stack.start("worker", [eonyx_executable(), "worker", "--concurrency", "2"])
    api, url = start_api(stack)
    gunicorn_pids = {api.process.pid} | children_of(api.process.pid)
    assert len(gunicorn_pids) >= 3, "gunicorn should run a master and two workers"

    with httpx.Client(base_url=url, timeout=10) as http:
        login = http.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        user_id = http.get("/api/v1/users/me").json()["id"]

        # Two sessions through the API, two written straight to the files (as a restore or
        # another replica would leave them): the index does not know the latter yet.
        for title in ("Via the API", "Also via the API"):
            assert http.post("/api/v1/sessions", json={"title": title}).status_code == 201
        store = SessionStore(Path(stack.env["DATA_DIR"]))
        for title in ("Restored one", "Restored two"):
            state, _ = store.create(user_id, source="api", title=title)
            store.append(user_id, state.id, [{"type": "meta", "set": {"pinned": True}}])

        first = rebuild(http, worker)
        assert first["pid"] == worker.process.pid
        assert first["pid"] not in gunicorn_pids
        assert (first["scanned"], first["reread"]) == (4, 2)
        before = http.get("/api/v1/sessions").json()["items"]
        assert {item["title"] for item in before} == {
            "Via the API",
            "Also via the API",
            "Restored one",
            "Restored two",
        }
        assert [item["pinned"] for item in before] == [True, True, False, False]

        database = Database(stack.env["DATABASE_URL"])
        try:
            with database.session() as db:
                sync.drop(db)
            assert index_rows(database, user_id) == (0, False)

            second = rebuild(http, worker)
            assert second["pid"] == worker.process.pid
            assert (second["scanned"], second["reread"]) == (4, 4)
            # The job rebuilt the index itself (not the lazy rebuild of the next listing).
            assert index_rows(database, user_id) == (4, True)
        finally:
            database.dispose()

        after = http.get("/api/v1/sessions").json()["items"]
        assert after == before

    # Both stop gracefully on SIGTERM, as `docker compose stop` asks them to.
    assert api.stop() == 0, api.output()
    assert worker.stop() == 0, worker.output()


def compose_service(name: str) -> dict[str, Any]:
    """A service of docker-compose.yml, with compose's `$$` escape undone."""

    def unescape(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: unescape(item) for key, item in value.items()}
        if isinstance(value, list):
            return [unescape(item) for item in value]
        return value.replace("$$", "$") if isinstance(value, str) else value

    return unescape(yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"][name])


def on_this_host(value: Any, data_dir: str, api_port: int) -> Any:
    """A compose command adapted to these processes: our DATA_DIR, our port, our python."""
    if isinstance(value, list):
        return [on_this_host(item, data_dir, api_port) for item in value]
    if value == "python":
        return sys.executable
    value = re.sub(r"(?<![\w/])/data(?=/|$|\s|')", data_dir, value)
    return value.replace("127.0.0.1:8000", f"127.0.0.1:{api_port}")


def healthcheck(stack: Stack, test: list[str], data_dir: str, api_port: int) -> int:
    kind, *argv = on_this_host(test, data_dir, api_port)
    if kind == "CMD-SHELL":
        argv = ["sh", "-c", argv[0]]
    env = stack.env | {"HOSTNAME": socket.gethostname()}
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return -1
    return done.returncode


def test_compose_commands_and_healthchecks_work_on_live_processes(stack: Stack) -> None:
    """The api, worker and beat healthchecks of docker-compose.yml pass against the real
    processes, and beat starts with the compose command line (paths moved off /data)."""
    data_dir = stack.env["DATA_DIR"]
    stack.run("db", "upgrade")
    worker = stack.start("worker", [eonyx_executable(), "worker", "--concurrency", "1"])
    api, url = start_api(stack)
    port = int(url.rsplit(":", 1)[1])
    beat_service = compose_service("beat")
    beat = stack.start("beat", on_this_host(beat_service["command"], data_dir, port))

    for name, proc in (("api", api), ("worker", worker), ("beat", beat)):
        test = compose_service(name)["healthcheck"]["test"]

        def healthy(test: list[str] = test, proc: Proc = proc) -> bool:
            proc.check_running()
            return healthcheck(stack, test, data_dir, port) == 0

        wait_for(healthy, START_TIMEOUT, f"the {name} healthcheck to pass", interval=0.5)

    assert beat.stop() == 0, beat.output()
    # Without a beat the api is not ready (its heartbeat went with it).
    api_test = compose_service("api")["healthcheck"]["test"]
    assert healthcheck(stack, api_test, data_dir, port) != 0
    readyz = httpx.get(f"{url}/readyz", timeout=5).json()
    assert readyz["checks"]["beat"].startswith("failed")
    assert readyz["checks"]["worker"] == "ok"
    # A stopped worker fails its healthcheck (waiting 1 s for a reply rather than 10).
    assert worker.stop() == 0, worker.output()
    worker_test = compose_service("worker")["healthcheck"]["test"]
    assert " -t 10" in worker_test[1]
    worker_test = [worker_test[0], worker_test[1].replace(" -t 10", " -t 1")]
    assert healthcheck(stack, worker_test, data_dir, port) != 0


def test_a_teams_message_is_answered_by_the_worker(
    stack: Stack, fake_llm: FakeLLM, fake_botframework: FakeBotFramework
) -> None:
    """gunicorn acknowledges the activity; the separate worker runs the turn and replies."""
    stack.env |= fake_botframework.settings_env | {
        "EONYX_LLM_BASE_URL": fake_llm.base_url,
        "EONYX_LLM_MODEL": "fake-model",
    }
    stack.run("db", "upgrade")
    stack.run("users", "create", "ada", "--password", PASSWORD)
    assert "now chats as ada" in stack.run("users", "link", "ada", "--teams-aad-id", USER_AAD_ID)
    worker = stack.start("worker", [eonyx_executable(), "worker", "--concurrency", "2"])
    api, url = start_api(stack)
    activity = fake_botframework.activity("Hello from Teams")
    response = httpx.post(
        f"{url}/integrations/teams/messages",
        json=activity,
        headers={"Authorization": f"Bearer {fake_botframework.sign()}"},
        timeout=10,
    )
    assert response.status_code == 202, response.text

    def replied() -> list[Post]:
        worker.check_running()
        return fake_botframework.replies()

    [reply] = wait_for(replied, JOB_TIMEOUT, f"the worker's reply:\n{worker.output()}")
    assert reply.text == "Hello from Teams"
    assert reply.reply_to == activity["id"]
    assert worker.stop() == 0, worker.output()
    assert api.stop() == 0, api.output()
