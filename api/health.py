"""/healthz (the process answers) and /readyz (database reachable, store and broker taking a
write, and a worker and the beat scheduler alive: their heartbeats in Redis are fresh).

A missing worker or beat makes /readyz answer 503: chats still work, but likes, titles,
memory extraction and the periodic sweeps wait until one is back. The checks name what is
missing (`"worker": "failed: no heartbeat in the last 30 s"`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import redis
from flask import Blueprint
from sqlalchemy import text

from api.context import runtime
from shared.core import registry
from shared.core.release import eonyx_version
from shared.infra import heartbeats

blp = Blueprint("health", __name__)


@blp.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok", "version": eonyx_version()}


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
    checks["store"] = _store_writes(rt.settings.data_dir)
    if rt.redis is None:
        checks["broker"] = "failed: no Redis configured"
    else:
        try:
            # A write, not a ping: a Redis whose disk is full answers pings and refuses
            # every write (MISCONF), jobs and locks included.
            rt.redis.set(registry.READY_PROBE, "1", ex=60)
            checks["broker"] = "ok"
        except redis.ResponseError as exc:
            checks["broker"] = f"failed: {str(exc).split(chr(10))[0][:200]}"
        except Exception as exc:  # noqa: BLE001
            checks["broker"] = f"failed: {type(exc).__name__}"
    client = rt.redis if checks["broker"] == "ok" else None
    for role in (heartbeats.WORKER, heartbeats.BEAT):
        checks[role] = _heartbeat(client, role) if client is not None else "unknown: no broker"
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503


def _store_writes(data_dir: Path) -> str:
    """Whether the store takes a write: a small file written, fsynced and removed (a full
    or read-only disk fails every turn while the directory still looks writable)."""
    probe = data_dir / f".readyz-{os.getpid()}-{threading.get_ident()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"ok\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"failed: cannot write: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return "ok"


def _heartbeat(client: redis.Redis, role: str) -> str:
    try:
        found = heartbeats.alive(client, role)
    except Exception as exc:  # noqa: BLE001
        return f"failed: {type(exc).__name__}"
    return "ok" if found else f"failed: no heartbeat in the last {heartbeats.TTL} s"
