"""Per-person rate limits (the `limits` library's moving window), counted in the runtime's
Redis.

Two limits, each per user, over all of their tokens together (API keys, login tokens and
browser sign-ins: minting another key buys no fresh budget), or per client address for a
request without a valid token (a random token per request must not buy a fresh budget each
time), in a moving window of one minute:

- RATE_LIMIT_REQUESTS_PER_MINUTE over every API request of that user;
- RATE_LIMIT_TURNS_PER_MINUTE over their turns: the requests of every view that may call a
  model, which says so itself with `@counts_as_turn` (the session's turns, retries
  included, `/v1/chat/completions` and `/v1/responses`; tests/api/test_rate_limits_api.py
  finds every view that can reach the model client and fails on one that does not say so).

A request over a limit is answered 429 `{"error": {"code": "rate_limited", ...}}` with
`Retry-After` in seconds (the OpenAI facade in its own error shape, see api/facade).
The counters live in Redis, so every API process and replica shares them; without Redis
each process counts for itself. A Redis failure lets requests through (logged) rather than
refusing them. `RATE_LIMITS_ENABLED=false` turns both off. /healthz, /readyz, /metrics, the
web client's static files and the Teams endpoint (one Bot Framework token speaks for every
Teams user) are never limited, nor is a request that no route takes (its 404).

One check before each request, made here on `limits` itself: Flask-Limiter, which it once
was, spent about 0.1 ms of every request (0.2 ms on a listed page) deciding which limits
apply, the same two every time. Whose budget it is comes from the token check the view
makes anyway (the process's token cache, else one query), so it costs no round trip more.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, current_app, request
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from api.context import check_presented, presented_token
from shared.core import registry
from shared.core.errors import TooManyRequests, Unauthorized
from shared.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)

TURN_MARK = "eonyx_counts_as_turn"  # the attribute `counts_as_turn` sets on a view
# Health and metrics are probes; the Teams endpoint is called by the Bot Framework with one
# token for every Teams user (each activity is checked, acknowledged and queued at once).
UNLIMITED_BLUEPRINTS = frozenset({"health", "metrics", "teams"})


def counts_as_turn(view: F) -> F:
    """Declare a view (a MethodView's method, or a plain view function) a turn: each of its
    requests may call a model, and spends a turn of the caller's budget besides a request.
    Every view that can reach the model client must carry it (a test walks the URL map)."""
    setattr(view, TURN_MARK, True)
    return view


def is_turn(app: Flask, endpoint: str, method: str) -> bool:
    """Whether `method` on `endpoint` was declared with `counts_as_turn`."""
    view = app.view_functions.get(endpoint)
    handler = getattr(getattr(view, "view_class", None), method.lower(), None) or view
    return bool(getattr(handler, TURN_MARK, False))


def client_key() -> str:
    """Whose budget a request spends: the user behind the token it presents (a bearer token,
    the events socket's `?token=`, or the browser's session cookie; api/context.py) when it
    is valid, the same for all of a user's tokens; otherwise its address, as for a request
    without one (a sign-in, a probe). The check is the one the view would make, and the view
    reuses its answer (`api.context.checked_principal`): one lookup per request either way,
    from the process's token cache while it is fresh."""
    token, _ = presented_token(request.args.get("token"))
    by_address = registry.RATE_LIMIT_BY_ADDRESS + (request.remote_addr or "unknown")
    if not token:
        return by_address
    try:
        found = check_presented(request.args.get("token"))
    except Unauthorized:
        return by_address  # counted with the address's anonymous requests
    except SQLAlchemyError:
        # the database cannot say whose it is: count it under its token (hashed, so that no
        # token reaches Redis in clear), and let the view answer
        return registry.RATE_LIMIT_BY_TOKEN + hashlib.sha256(token.encode()).hexdigest()[:32]
    return registry.RATE_LIMIT_BY_USER + found.user_id


class RateLimits:
    """The two limits, counted in one moving-window store, checked before each request."""

    def __init__(self, window: MovingWindowRateLimiter, requests: str, turns: str) -> None:
        self.window = window
        self.requests = parse(requests)
        self.turns = parse(turns)
        self.uncounted = False  # Redis did not answer: one warning per outage, not per request
        self.turn_views: dict[tuple[str, str], bool] = {}  # (endpoint, method): a turn?

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
        if self.is_turn(endpoint, request.method):
            self.spend(self.turns, "turns", key)

    def is_turn(self, endpoint: str, method: str) -> bool:
        known = self.turn_views.get((endpoint, method))
        if known is None:
            known = self.turn_views[endpoint, method] = is_turn(current_app, endpoint, method)
        return known

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
        whose = (
            "your account (all its keys and sign-ins together)"
            if key.startswith(registry.RATE_LIMIT_BY_USER)
            else "this address"
            if key.startswith(registry.RATE_LIMIT_BY_ADDRESS)
            else "this token"
        )
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
