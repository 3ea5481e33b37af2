"""/healthz (the process answers) and /readyz (database, store and broker reachable, and a
worker and the beat scheduler alive: their heartbeats in Redis are fresh).

A missing worker or beat makes /readyz answer 503: chats still work, but likes, titles,
memory extraction and the periodic sweeps wait until one is back. The checks name what is
missing (`"worker": "failed: no heartbeat in the last 30 s"`).
"""

from __future__ import annotations

import os
from typing import Any

import redis
from flask import Blueprint
from sqlalchemy import text

from api.context import runtime
from shared.storage import heartbeats

blp = Blueprint("health", __name__)


@blp.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@blp.get("/readyz")
def readyz() -> tuple[dict[str, Any], int]:
    rt = runtime()
    checks: dict[str, str] = {}
    try:
        with rt.db.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready", reported as such
        checks["database"] = f"failed: {type(exc).__name__}"
    data_dir = rt.settings.data_dir
    checks["store"] = "ok" if os.access(data_dir, os.W_OK | os.X_OK) else "failed: not writable"
    if rt.redis is None:
        checks["broker"] = "failed: no Redis configured"
    else:
        try:
            rt.redis.ping()
            checks["broker"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["broker"] = f"failed: {type(exc).__name__}"
    client = rt.redis if checks["broker"] == "ok" else None
    for role in (heartbeats.WORKER, heartbeats.BEAT):
        checks[role] = _heartbeat(client, role) if client is not None else "unknown: no broker"
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503


def _heartbeat(client: redis.Redis, role: str) -> str:
    try:
        found = heartbeats.alive(client, role)
    except Exception as exc:  # noqa: BLE001
        return f"failed: {type(exc).__name__}"
    return "ok" if found else f"failed: no heartbeat in the last {heartbeats.TTL} s"
