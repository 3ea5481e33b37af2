"""`eonyx serve` as a child process, started and stopped the way a user does it.

Benches that measure "the server" start the real command (whatever it serves with: the
development server or gunicorn), so their figures are the ones a deployment sees:

    with eonyx_serve(env, log=ws.root / "serve.log") as server:
        httpx.get(f"{server.url}/healthz")

Ctrl+C (SIGINT) stops it, as at a terminal; a server that does not stop in time is killed
with its whole process group (it was started in a group of its own).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

# What `eonyx serve` reads from the environment and a bench decides itself.
_OWNED = ("DATA_DIR", "DATABASE_URL", "REDIS_URL", "HOME")
# A bench sends hundreds of turns a minute with one token: rate limits off unless asked.
BENCH_SETTINGS = {"RATE_LIMITS_ENABLED": "false", "EMPTY_SESSIONS_PER_USER": "0"}


@dataclass(frozen=True)
class Served:
    url: str
    pid: int
    command: list[str]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def eonyx_command() -> list[str]:
    """The `eonyx` script of the interpreter running the bench (the project's venv)."""
    script = Path(sys.executable).with_name("eonyx")
    if script.exists():
        return [str(script)]
    found = shutil.which("eonyx")
    return [found] if found else [sys.executable, "-m", "cli"]


def serve_env(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without the variables a bench decides, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if k not in _OWNED and not k.startswith("EONYX_")}
    return env | BENCH_SETTINGS | dict(settings)


@contextmanager
def eonyx_serve(
    settings: Mapping[str, str], *, log: Path, args: list[str] | None = None, timeout: float = 90
) -> Iterator[Served]:
    """Run `eonyx serve` on a free loopback port until the block ends; its output goes to
    `log`. Ready when /healthz answers."""
    port = free_port()
    command = [*eonyx_command(), "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += args or []
    env = serve_env(settings)
    with http_server("eonyx serve", command, env, port, log=log, timeout=timeout) as served:
        yield served


@contextmanager
def http_server(
    name: str,
    command: list[str],
    env: Mapping[str, str],
    port: int,
    *,
    log: Path,
    timeout: float = 90,
) -> Iterator[Served]:
    """Run `command` (a server listening on 127.0.0.1:`port`, in a process group of its own)
    until the block ends; its output goes to `log`. Ready when /healthz answers."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(name, process, url, log, timeout)
        yield Served(url, process.pid, command)
    finally:
        _stop(process)


def _wait_ready(
    name: str, process: subprocess.Popen[bytes], url: str, log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited at start:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{name} did not answer in {timeout:g} s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own group, started above
        process.wait()
