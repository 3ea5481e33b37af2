"""`eonyx serve` end to end: one command on an empty DATA_DIR, no outside service.

It starts an embedded Redis and a worker process, answers HTTP, runs background jobs in the
worker (never in the request), and on Ctrl+C stops everything it started and exits 0.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import eonyx_executable, free_port, wait_for

pytestmark = pytest.mark.slow

START_TIMEOUT = 60.0
JOB_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
URL_LINE = re.compile(r"Eonyx is running at (http://\S+)")


def children_of(pid: int) -> list[int]:
    """Direct children of a process, from /proc (Linux); [] where /proc is not there."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def descendants_of(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        for child in children_of(queue.pop()):
            found.append(child)
            queue.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def zombie_or_gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@dataclass
class Served:
    """A running `eonyx serve` and everything it printed so far."""

    process: subprocess.Popen[str]
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # ends when every holder of the pipe has exited
            self.lines.append(line)

    def url(self) -> str | None:
        if self.process.poll() is not None:
            pytest.fail(f"eonyx serve exited with {self.process.returncode}:\n{self.output}")
        match = URL_LINE.search(self.output)
        return match.group(1) if match else None


@pytest.fixture
def serve_env(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "XDG_DATA_HOME", "EONYX_URL", "EONYX_TOKEN")
    }
    (tmp_path / "home").mkdir()
    env |= {"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def served(serve_env: dict[str, str]) -> Iterator[Served]:
    process = subprocess.Popen(
        [eonyx_executable(), "serve", "--port", str(free_port())],
        env=serve_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    running = Served(process, serve_env)
    running.reader = threading.Thread(target=running.read, daemon=True)
    running.reader.start()
    started: list[int] = []
    try:
        yield running
    finally:
        if process.poll() is None:
            started = descendants_of(process.pid)
            process.kill()
            process.wait(10)
        for pid in started:  # whatever serve left behind when it had to be killed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        running.reader.join(10)
        if process.stdout is not None:
            process.stdout.close()


def eonyx(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [eonyx_executable(), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_for_job(http: httpx.Client, job_id: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        job = http.get(f"/api/v1/jobs/{job_id}")
        assert job.status_code == 200, job.text
        body = job.json()
        assert body["state"] not in ("FAILURE", "REVOKED"), body
        return body if body["state"] == "SUCCESS" else None

    return wait_for(finished, JOB_TIMEOUT, f"job {job_id}")


def test_serve_runs_everything_and_stops_cleanly_on_ctrl_c(served: Served, tmp_path: Path) -> None:
    data_dir = Path(served.env["DATA_DIR"])
    assert not data_dir.exists()
    url = wait_for(served.url, START_TIMEOUT, "the 'Eonyx is running at' line")
    redis_socket = data_dir / "run" / "redis.sock"
    assert redis_socket.exists()
    assert (data_dir / "eonyx.db").is_file()  # SQLite in DATA_DIR: no DATABASE_URL needed

    created = eonyx(served.env, "users", "create", "admin", "--password", "pa55word", "--admin")
    assert created.returncode == 0, created.stderr
    assert "created admin admin" in created.stdout

    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.get("/healthz").status_code == 200
        ready = http.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"database": "ok", "store": "ok", "broker": "ok"}

        login = http.post("/api/v1/auth/login", json={"username": "admin", "password": "pa55word"})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"

        ids = []
        for title in ("First", "Second"):
            response = http.post("/api/v1/sessions", json={"title": title})
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        listing = http.get("/api/v1/sessions")
        assert listing.status_code == 200
        assert [item["id"] for item in listing.json()["items"]] == ids[::-1]  # newest first

        queued = http.post("/api/v1/index/rebuild")
        assert queued.status_code == 202, queued.text
        result = wait_for_job(http, queued.json()["id"])["result"]

    # The job ran in the worker, a child process of serve, not in the request.
    worker_pid = result["pid"]
    assert worker_pid != served.process.pid
    assert result["scanned"] == 2
    children = children_of(served.process.pid)
    assert worker_pid in children
    everything = descendants_of(served.process.pid)
    assert len(children) >= 2, "serve should have a worker and an embedded Redis"

    # A second serve on the same DATA_DIR refuses instead of stealing the Redis socket.
    second = eonyx(served.env, "serve", "--port", str(free_port()))
    assert second.returncode != 0
    assert "is Eonyx running?" in second.stderr
    assert redis_socket.exists()

    served.process.send_signal(signal.SIGINT)
    try:
        code = served.process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"eonyx serve did not stop within {STOP_TIMEOUT:.0f} s:\n{served.output}")
    assert code == 0, served.output
    assert served.reader is not None
    served.reader.join(STOP_TIMEOUT)
    # The pipe closes only when no process holds it: the worker and its beat are gone too.
    assert not served.reader.is_alive(), "a child of serve still holds its output"
    assert "Eonyx stopped." in served.output

    assert not redis_socket.exists()
    assert not alive(worker_pid)
    left = [pid for pid in everything if not zombie_or_gone(pid)]
    assert not left, f"processes left behind by serve: {left}"
