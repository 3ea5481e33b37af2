"""/healthz answers while the process does; /readyz also needs the database, the store, the
broker, and a live worker and beat (their heartbeats in Redis)."""

from __future__ import annotations

import time

from flask.testing import FlaskClient

from shared.core.release import eonyx_version
from shared.infra import heartbeats
from shared.runtime import Runtime

ALL_OK = {"database": "ok", "store": "ok", "broker": "ok", "worker": "ok", "beat": "ok"}


def test_health_answers_without_anything_else(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok", "version": eonyx_version()}


def test_ready_with_a_worker_and_a_beat(client: FlaskClient, rt: Runtime) -> None:
    assert rt.redis is not None
    heartbeats.beat(rt.redis, heartbeats.WORKER, "celery@here")
    heartbeats.beat(rt.redis, heartbeats.BEAT, "here:1")
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.get_json()
    assert ready.get_json() == {"status": "ready", "checks": ALL_OK}


def test_a_missing_worker_or_beat_is_not_ready(client: FlaskClient, rt: Runtime) -> None:
    assert rt.redis is not None
    nothing = client.get("/readyz")
    assert nothing.status_code == 503
    checks = nothing.get_json()["checks"]
    assert checks["worker"] == checks["beat"] == "failed: no heartbeat in the last 30 s"
    assert checks["broker"] == "ok"

    heartbeats.beat(rt.redis, heartbeats.BEAT, "here:1")
    heartbeats.beat(rt.redis, heartbeats.WORKER, "celery@here", ttl=1)  # then killed
    assert client.get("/readyz").status_code == 200
    time.sleep(1.5)
    gone = client.get("/readyz")
    assert gone.status_code == 503
    assert gone.get_json()["checks"] == ALL_OK | {"worker": "failed: no heartbeat in the last 30 s"}
    assert heartbeats.alive(rt.redis, heartbeats.WORKER) == []

    heartbeats.beat(rt.redis, heartbeats.WORKER, "celery@there")
    heartbeats.forget(rt.redis, heartbeats.BEAT, "here:1")  # a beat that stopped cleanly
    stopped = client.get("/readyz").get_json()["checks"]
    assert stopped == ALL_OK | {"beat": "failed: no heartbeat in the last 30 s"}


def test_a_heartbeat_thread_beats_until_stopped(rt: Runtime) -> None:
    assert rt.redis is not None
    beating = heartbeats.Heartbeat(rt.redis, heartbeats.WORKER, "celery@thread").start()
    try:
        deadline = time.monotonic() + 5
        while not heartbeats.alive(rt.redis, heartbeats.WORKER) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert heartbeats.alive(rt.redis, heartbeats.WORKER) == ["celery@thread"]
    finally:
        beating.stop()
    assert heartbeats.alive(rt.redis, heartbeats.WORKER) == []
