"""The embedded Redis of `eonyx serve` keeps what was queued across a restart (its AOF)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import redis

from shared.infra.embedded_redis import EmbeddedRedis


def test_queued_jobs_survive_a_restart_and_a_kill(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    client = redis.Redis.from_url(server.start())
    try:
        client.rpush("eonyx", "job-1", "job-2")
    finally:
        client.close()
        server.stop()

    server = EmbeddedRedis(tmp_path)
    client = redis.Redis.from_url(server.start())
    try:
        assert client.lrange("eonyx", 0, -1) == [b"job-1", b"job-2"]
        client.rpush("eonyx", "job-3")
        client.lpop("eonyx")
        # A write goes to the file before its reply, except while the last second's fsync is
        # still running: then Redis holds it back, for up to two seconds (appendfsync
        # everysec). Once nothing is held back, a kill loses nothing.
        deadline = time.monotonic() + 10
        while client.info("persistence")["aof_buffer_length"] and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        client.close()
    # Killed, not stopped: what is in the file is read back (only the machine crashing could
    # lose what was not fsynced yet, the last second or two).
    assert server.process is not None
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()

    server = EmbeddedRedis(tmp_path)
    client = redis.Redis.from_url(server.start())
    try:
        assert client.lrange("eonyx", 0, -1) == [b"job-2", b"job-3"]
    finally:
        client.close()
        server.stop()
    assert (tmp_path / "redis").is_dir()
