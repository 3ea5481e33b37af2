"""Per-token rate limits (the `limits` library's moving window), counted in the runtime's
Redis.

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
refusing them. `RATE_LIMITS_ENABLED=false` turns both off. /healthz, /readyz, /metrics, the
web client's static files and the Teams endpoint (one Bot Framework token speaks for every
Teams user) are never limited, nor is a request that no route takes (its 404).

One check before each request, made here on `limits` itself: Flask-Limiter, which it once
was, spent about 0.1 ms of every request (0.2 ms on a listed page) deciding which limits
apply, the same two every time.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

from flask import Flask, request
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from api.context import check_presented, presented_token
from shared.core import registry
from shared.core.errors import TooManyRequests, Unauthorized
from shared.runtime import Runtime

log = logging.getLogger(__name__)

# The views whose requests are turns (their endpoints, as Flask names them).
TURN_ENDPOINTS = frozenset({"turns.Turns", "openai.ChatCompletions"})
# Health and metrics are probes; the Teams endpoint is called by the Bot Framework with one
# token for every Teams user (each activity is checked, acknowledged and queued at once).
UNLIMITED_BLUEPRINTS = frozenset({"health", "metrics", "teams"})


def client_key() -> str:
    """Whose budget a request spends: the token it presents (a bearer token, the events
    socket's `?token=`, or the browser's session cookie; api/context.py) when it is valid,
    hashed so that no token reaches Redis in clear; otherwise its address, as for a request
    without one (a sign-in, a probe). The check is the one the view would make, and the view
    reuses its answer (`api.context.checked_principal`): one query per request either way."""
    token, _ = presented_token(request.args.get("token"))
    by_address = registry.RATE_LIMIT_BY_ADDRESS + (request.remote_addr or "unknown")
    if not token:
        return by_address
    try:
        check_presented(request.args.get("token"))
    except Unauthorized:
        return by_address  # counted with the address's anonymous requests
    except SQLAlchemyError:
        pass  # the database cannot say: count it under its token, and let the view answer
    return registry.RATE_LIMIT_BY_TOKEN + hashlib.sha256(token.encode()).hexdigest()[:32]


class RateLimits:
    """The two limits, counted in one moving-window store, checked before each request."""

    def __init__(self, window: MovingWindowRateLimiter, requests: str, turns: str) -> None:
        self.window = window
        self.requests = parse(requests)
        self.turns = parse(turns)
        self.uncounted = False  # Redis did not answer: one warning per outage, not per request

    def check(self) -> None:
        """Spend the request's budget, and a turn's its turn budget; 429 when one is spent."""
        endpoint = request.endpoint
        if (
            not endpoint
            or endpoint.rpartition(".")[2] == "static"
            or request.blueprint in UNLIMITED_BLUEPRINTS
        ):
            return
        key = client_key()
        self.spend(self.requests, "requests", key)
        if endpoint in TURN_ENDPOINTS and request.method == "POST":
            self.spend(self.turns, "turns", key)

    def spend(self, limit: RateLimitItem, scope: str, key: str) -> None:
        try:
            hit = self.window.hit(limit, scope, key)
            reset_at = 0.0 if hit else self.window.get_window_stats(limit, scope, key).reset_time
        except RedisError as exc:
            if not self.uncounted:
                self.uncounted = True
                log.warning("rate limits are not counted until Redis answers again: %s", exc)
            return
        if self.uncounted:
            self.uncounted = False
            log.warning("rate limits are counted again: Redis answers")
        if hit:
            return
        # the oldest hit leaves the window by then; at least a second, at most the window
        wait = max(1, min(limit.get_expiry(), math.ceil(reset_at - time.time())))
        whose = "this token" if key.startswith(registry.RATE_LIMIT_BY_TOKEN) else "this address"
        raise TooManyRequests(
            f"too many requests for {whose} ({limit}); retry later",
            retry_after=wait,
            code="rate_limited",
        )


def register_rate_limits(app: Flask, rt: Runtime) -> RateLimits | None:
    settings = rt.settings
    if not settings.rate_limits_enabled:
        return None
    if rt.redis is not None:
        storage: RedisStorage | MemoryStorage = RedisStorage(
            "redis://",
            connection_pool=rt.redis.connection_pool,
            key_prefix=registry.RATE_LIMITS,
        )
    else:
        storage = MemoryStorage()
    limits = RateLimits(
        MovingWindowRateLimiter(storage),
        f"{settings.rate_limit_requests_per_minute} per minute",
        f"{settings.rate_limit_turns_per_minute} per minute",
    )
    app.before_request(limits.check)
    return limits
