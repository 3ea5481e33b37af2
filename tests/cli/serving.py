"""Running `eonyx serve` from a test: the process, what it printed, its process tree (Linux
/proc), and a fixture that always ends whatever a test started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import eonyx_executable, free_port, wait_for

START_TIMEOUT = 60.0
JOB_TIMEOUT = 60.0
STOP_TIMEOUT = 45.0
URL_LINE = re.compile(r"Eonyx is running at (http://\S+)")
PASSWORD = "pa55word"


def _stat(pid: int) -> list[str] | None:
    try:
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children_of(pid: int) -> list[int]:
    """Direct children of a process, from /proc (Linux); [] where /proc is not there."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def descendants_of(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        for child in children_of(queue.pop()):
            found.append(child)
            queue.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def zombie_or_gone(pid: int) -> bool:
    fields = _stat(pid)
    return fields is None or fields[0] == "Z"


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

    @property
    def data_dir(self) -> Path:
        return Path(self.env["DATA_DIR"])

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # ends when every holder of the pipe has exited
            self.lines.append(line)

    def url(self) -> str | None:
        if self.process.poll() is not None:
            pytest.fail(f"eonyx serve exited with {self.process.returncode}:\n{self.output}")
        match = URL_LINE.search(self.output)
        return match.group(1) if match else None

    def wait_url(self) -> str:
        return wait_for(self.url, START_TIMEOUT, "the 'Eonyx is running at' line")

    def child(self, needle: str) -> int:
        """The pid of serve's child whose command line holds `needle`."""
        found = [p for p in children_of(self.process.pid) if needle in command_line(p)]
        assert len(found) == 1, f"{needle}: {found} among {children_of(self.process.pid)}"
        return found[0]

    def stop(self, grace: float | None = None) -> None:
        """End serve however it goes: Ctrl+C (SIGINT) and `grace` seconds when given, else (or
        then) a kill; whatever it left behind is killed too, and its output closed."""
        left = descendants_of(self.process.pid) if self.process.poll() is None else []
        if grace is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.reader is not None:
            self.reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def stop_with_ctrl_c(self) -> None:
        """SIGINT, as a terminal's Ctrl+C; serve must exit 0 and every child with it."""
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"eonyx serve did not stop within {STOP_TIMEOUT:.0f} s:\n{self.output}")
        assert code == 0, self.output
        assert self.reader is not None
        self.reader.join(STOP_TIMEOUT)
        # The pipe closes only when no process holds it: the worker and its beat are gone too.
        assert not self.reader.is_alive(), "a child of serve still holds its output"
        assert "Eonyx stopped." in self.output


def serve_environment(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "XDG_DATA_HOME", "EONYX_URL", "EONYX_TOKEN")
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    env |= {"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def launch_serve(environment: dict[str, str], *args: str) -> Served:
    """`eonyx serve --port <free> *args` in its own process group, its output read as it
    comes (`Served.output`, `Served.wait_url`)."""
    process = subprocess.Popen(
        [eonyx_executable(), "serve", "--port", str(free_port()), *args],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    running = Served(process, environment)
    running.reader = threading.Thread(target=running.read, daemon=True)
    running.reader.start()
    return running


@pytest.fixture
def start_serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """`start_serve(*args, **env)`: `eonyx serve --port <free> *args` on a fresh DATA_DIR;
    whatever it started is killed at the end of the test if it is still running."""
    started: list[Served] = []

    def start(*args: str, **env: str) -> Served:
        running = launch_serve(serve_environment(tmp_path) | env, *args)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def eonyx(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [eonyx_executable(), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@contextmanager
def admin_client(served: Served, url: str) -> Iterator[httpx.Client]:
    """An HTTP client logged in as a new admin (created with `eonyx users create`)."""
    created = eonyx(served.env, "users", "create", "admin", "--password", PASSWORD, "--admin")
    assert created.returncode == 0, created.stderr
    assert "created admin admin" in created.stdout
    with httpx.Client(base_url=url, timeout=10) as http:
        login = http.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        yield http


def wait_for_job(http: httpx.Client, job_id: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        job = http.get(f"/api/v1/jobs/{job_id}")
        assert job.status_code == 200, job.text
        body = job.json()
        assert body["state"] not in ("FAILURE", "REVOKED"), body
        return body if body["state"] == "SUCCESS" else None

    return wait_for(finished, JOB_TIMEOUT, f"job {job_id}")


def ready(http: httpx.Client) -> dict[str, Any] | None:
    """/readyz's body once it answers 200 (the worker's heartbeat comes a moment after the
    URL is printed)."""
    response = http.get("/readyz")
    return response.json() if response.status_code == 200 else None
