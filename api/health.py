"""/healthz (the process answers) and /readyz (database, store and broker reachable)."""

from __future__ import annotations

import os
from typing import Any

from flask import Blueprint
from sqlalchemy import text

from api.context import runtime

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
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503
