"""The embedded Redis of `eonyx serve` keeps what was queued across a restart (its AOF)."""

from __future__ import annotations

import signal
from pathlib import Path

import redis

from shared.storage.embedded_redis import EmbeddedRedis


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
    finally:
        client.close()
    # Killed, not stopped: a write is in the file before its reply is sent, so the queue is
    # read back all the same (only the machine crashing could lose the last second).
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
