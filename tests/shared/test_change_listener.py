"""A cache's change listener: live only while Redis confirms it hears, back after an outage."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from shared.infra.change_listener import ChangeListener
from tests.conftest import free_port, wait_for


class OwnRedis:
    """A redis-server of this test's own, to stop and start again on the same port."""

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


def test_a_lost_redis_turns_the_cache_off_with_one_warning_and_back_on(
    own_redis: OwnRedis, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []
    client = redis.Redis(port=own_redis.port)
    listener = ChangeListener(
        client, "test:", on_change=heard.append, on_reset=lambda: None, name="cache"
    )
    try:
        wait_for(lambda: listener.live, 5, "the subscription")
        client.publish("test:alice", "1")
        wait_for(lambda: heard == ["alice"], 5, "the change")
        with caplog.at_level(logging.WARNING, logger="shared.infra.change_listener"):
            own_redis.stop()
            wait_for(lambda: not listener.live, 5, "the cache to turn off")
            time.sleep(2.5)  # two more tries to subscribe, both refused
            assert [r.getMessage() for r in caplog.records].count("cache on again") == 0
            offs = [r for r in caplog.records if "off until Redis answers again" in r.getMessage()]
            assert len(offs) == 1
            own_redis.start()
            wait_for(lambda: listener.live, 10, "the cache to turn on again")
            assert "cache on again" in [r.getMessage() for r in caplog.records]
        client.publish("test:bob", "1")
        wait_for(lambda: heard == ["alice", "bob"], 5, "a change after the outage")
    finally:
        listener.close()
        client.close()
