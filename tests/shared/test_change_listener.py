"""A cache's change listener: live only while Redis confirms it hears, back after an outage."""

from __future__ import annotations

import logging
import time

import pytest
import redis

from shared.infra.change_listener import ChangeListener
from tests.conftest import OwnRedis, wait_for


def test_a_lost_redis_turns_the_cache_off_with_one_warning_and_back_on(
    own_redis: OwnRedis, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []
    client = redis.Redis(port=own_redis.port)
    listener = ChangeListener(
        client,
        {"test:": lambda suffix, _data: heard.append(suffix)},
        on_reset=lambda: None,
        name="cache",
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
