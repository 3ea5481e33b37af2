"""Per-token rate limits (Flask-Limiter), counted in the runtime's Redis.

Two limits, each per valid token (per client address for a request without one, or with
one that is not valid: a random token per request must not buy a fresh budget each time),
in a moving window of one minute:

- RATE_LIMIT_REQUESTS_PER_MINUTE over every API request of that token together;
- RATE_LIMIT_TURNS_PER_MINUTE over its chat turns (`POST .../turns` and
  `POST /v1/chat/completions`), which cost a model call each.

A request over a limit is answered 429 `{"error": {"code": "rate_limited", ...}}` with
`Retry-After` in seconds (the OpenAI facade in its own error shape, see api/facade).
The counters live in Redis, so every API process and replica shares them; without Redis
each process counts for itself. A Redis failure lets requests through (logged) rather than
refusing them. `RATE_LIMITS_ENABLED=false` turns both off. /healthz, /readyz, /metrics and
the Teams endpoint (one Bot Framework token speaks for every Teams user) are never limited.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import cast

from flask import Blueprint, Flask, current_app, g, request
from flask_limiter import Limiter, RateLimitExceeded
from sqlalchemy.exc import SQLAlchemyError

from api.context import check_presented, presented_token
from shared.core import registry
from shared.core.errors import Unauthorized
from shared.runtime import Runtime

# The views whose requests are turns (their endpoints, as Flask names them).
TURN_ENDPOINTS = ("turns.Turns", "openai.ChatCompletions")
# Health and metrics are probes; the Teams endpoint is called by the Bot Framework with one
# token for every Teams user (each activity is checked, acknowledged and queued at once).
UNLIMITED_BLUEPRINTS = ("health", "metrics", "teams")
KEY_ATTRIBUTE = "eonyx_rate_key"  # the request's key, on flask.g (asked once per limit)


def client_key() -> str:
    """Whose budget a request spends: the token it presents (a bearer token, the events
    socket's `?token=`, or the browser's session cookie; api/context.py) when it is valid,
    hashed so that no token reaches Redis in clear; otherwise its address, as for a request
    without one (a sign-in, a probe). The check is the one the view would make, and the view
    reuses its answer (`api.context.checked_principal`): one query per request either way."""
    cached = g.get(KEY_ATTRIBUTE)
    if cached is not None:
        return cached
    token, _ = presented_token(request.args.get("token"))
    key = registry.RATE_LIMIT_BY_ADDRESS + (request.remote_addr or "unknown")
    if token:
        try:
            check_presented(request.args.get("token"))
            key = registry.RATE_LIMIT_BY_TOKEN + hashlib.sha256(token.encode()).hexdigest()[:32]
        except Unauthorized:
            pass  # counted with the address's anonymous requests
        except SQLAlchemyError:
            # The database cannot say: count it under its token, and let the view answer.
            key = registry.RATE_LIMIT_BY_TOKEN + hashlib.sha256(token.encode()).hexdigest()[:32]
    setattr(g, KEY_ATTRIBUTE, key)
    return key


def register_rate_limits(app: Flask, rt: Runtime) -> Limiter | None:
    settings = rt.settings
    if not settings.rate_limits_enabled:
        return None
    if rt.redis is not None:
        storage = {
            "storage_uri": "redis://",
            "storage_options": {"connection_pool": rt.redis.connection_pool},
        }
    else:
        storage = {"storage_uri": "memory://"}
    limiter = Limiter(
        client_key,
        app=app,
        application_limits=[f"{settings.rate_limit_requests_per_minute} per minute"],
        strategy="moving-window",
        headers_enabled=False,  # Retry-After on the 429 only (api/errors.py)
        retry_after="delta-seconds",
        swallow_errors=True,
        key_prefix=registry.RATE_LIMITS,
        **storage,  # type: ignore[arg-type]
    )
    for name in UNLIMITED_BLUEPRINTS:
        blueprint = app.blueprints.get(name)
        if blueprint is not None:
            limiter.exempt(cast(Blueprint, blueprint))
    turns = limiter.shared_limit(
        f"{settings.rate_limit_turns_per_minute} per minute", scope="turns", methods=["POST"]
    )
    for endpoint in TURN_ENDPOINTS:
        # Registered by the view's name: the limit applies to the view as Flask calls it.
        app.view_functions[endpoint] = turns(app.view_functions[endpoint])  # type: ignore[assignment]
    return limiter


def retry_after_seconds() -> int:
    """Whole seconds until the breached window lets this key through again (at least 1)."""
    for limiter in current_app.extensions.get("limiter", ()):
        current = limiter.current_limit
        if current is not None and current.breached:
            window = current.limit.get_expiry()  # the oldest hit leaves the window by then
            return max(1, min(window, math.ceil(current.reset_at - time.time())))
    return 60


def limit_message(exc: RateLimitExceeded) -> str:
    whose = (
        "this token"
        if str(g.get(KEY_ATTRIBUTE, "")).startswith(registry.RATE_LIMIT_BY_TOKEN)
        else "this address"
    )
    return f"too many requests for {whose} ({exc.description}); retry later"
