"""Tokens per person: what each user's model calls used, and their optional monthly budget.

Every model call made for a user (a turn's rounds, a title, a memory job, a summary) is
counted in `token_usage`, one row per user, month (`YYYY-MM`, UTC), offering and role, by
the model client itself (`LLMClient(meter=...)`, `complete(..., user_id=...)`) once the
answer is in: the model's own `usage` when it gives one, else the estimate compaction uses
(about 4 characters a token, `estimate`). The row is incremented in one statement (INSERT
... ON CONFLICT DO UPDATE), so calls of one user in several processes never lose a count.

A budget (`users.monthly_token_budget`, NULL: MONTHLY_TOKEN_BUDGET; 0: none) bounds prompt
plus completion tokens in a calendar month. It is checked before a call is asked for, not
during it: a turn that starts under the budget finishes, so a user may pass it by one turn
(and, across processes, by what other processes counted in the last CACHE_SECONDS: each
process keeps the figure it read, adding its own calls to it, and reads it again after
that long). A user at or over it gets `BudgetExceeded` (429 `budget_exceeded`) until the
first of the next month, UTC.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict, cast

import orjson
from sqlalchemy import Table, func, select
from sqlalchemy.orm import Session

from shared.core.clock import Clock, SystemClock, isoformat
from shared.core.errors import TooManyRequests
from shared.core.messages import message_chars
from shared.db.database import Database, insert_for
from shared.db.orm import TokenUsage, User

log = logging.getLogger(__name__)

_TABLE = cast(Table, TokenUsage.__table__)
CHARS_PER_TOKEN = 4  # compaction's estimate (shared/chat/compaction.py), for a silent model
CACHE_SECONDS = 10.0  # how long a process trusts the figure it read of a user's month


# -- months ---------------------------------------------------------------------------------


def month_of(moment: datetime) -> str:
    """`YYYY-MM` of a moment, in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m")


def resets_at(moment: datetime) -> datetime:
    """The first instant of the month after `moment`'s (UTC): when a budget starts again."""
    at = moment.astimezone(UTC)
    year, month = (at.year + 1, 1) if at.month == 12 else (at.year, at.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


# -- what a call used -----------------------------------------------------------------------


def estimate(messages: Iterable[Mapping[str, Any] | orjson.Fragment], answer: str) -> int:
    """Tokens of messages (or of an answer's text), as compaction estimates them."""
    chars = len(answer)
    for message in messages:
        if isinstance(message, orjson.Fragment):  # encoded once per turn: read back here only
            message = orjson.loads(orjson.dumps(message))
        chars += message_chars(message)
    return math.ceil(chars / CHARS_PER_TOKEN)


def counts(
    usage: Mapping[str, Any] | None,
    messages: Iterable[Mapping[str, Any] | orjson.Fragment],
    answer: Mapping[str, Any] | None,
) -> tuple[int, int]:
    """(prompt, completion) tokens of a call: the model's figures, or for any it did not
    give, the estimate from what was sent and what came back."""
    given = usage or {}
    prompt, completion = given.get("prompt_tokens"), given.get("completion_tokens")
    if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt < 0:
        prompt = estimate(messages, "")
    if not isinstance(completion, int) or isinstance(completion, bool) or completion < 0:
        completion = math.ceil(message_chars(answer) / CHARS_PER_TOKEN) if answer else 0
    return prompt, completion


# -- what the reports say ------------------------------------------------------------------


class BudgetView(TypedDict):
    limit: int | None
    used: int
    remaining: int | None
    resets_at: str


class UsageTotals(TypedDict):
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class UsageLine(UsageTotals):
    """One offering and role's calls in a month."""

    offering: str
    role: str


class MonthReport(UsageTotals):
    """A user's month (`GET /me/usage`'s `tokens`, `eonyx users budget`)."""

    month: str
    by_offering: list[UsageLine]
    budget: BudgetView


class UserUsage(UsageTotals):
    """One user's line in the administrators' view."""

    user_id: str
    username: str
    monthly_token_budget: int | None
    by_offering: list[UsageLine]
    budget: BudgetView


class AllUsage(TypedDict):
    month: str
    users: list[UserUsage]


# -- the budget -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """A user's budget this month: `limit` None when there is none."""

    limit: int | None
    used: int
    resets_at: datetime

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.used >= self.limit

    def to_dict(self) -> BudgetView:
        return {
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resets_at": isoformat(self.resets_at),
        }


class BudgetExceeded(TooManyRequests):
    """The user used their month's tokens: no model call for them until `resets_at`."""

    code = "budget_exceeded"

    def __init__(self, budget: Budget, now: datetime) -> None:
        wait = max(1, math.ceil((budget.resets_at - now).total_seconds()))
        super().__init__(
            f"your monthly token budget is used up ({budget.used:,} of {budget.limit:,} "
            f"tokens); it resets at {isoformat(budget.resets_at)}",
            retry_after=wait,
        )
        self.budget = budget
        self.details = dict(budget.to_dict())


def effective_limit(own: int | None, default: int) -> int | None:
    """A user's limit: their own, else the deployment's; 0 is no limit (None)."""
    limit = default if own is None else own
    return limit or None


class TokenMeter:
    """Counts calls into `token_usage` and answers, from a short-lived per-process figure,
    whether a user may make another."""

    def __init__(
        self,
        db: Database,
        default_budget: int,
        *,
        clock: Clock | None = None,
        cache_seconds: float = CACHE_SECONDS,
    ) -> None:
        self.db = db
        self.default_budget = default_budget
        self.clock: Clock = clock or SystemClock()
        self.cache_seconds = cache_seconds
        self._lock = threading.Lock()
        # user id -> (month, limit, used, read at (monotonic))
        self._figures: dict[str, tuple[str, int | None, int, float]] = {}

    def record(
        self, user_id: str, offering: str, role: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        """Add one call of `user_id` to this month's row of its offering and role."""
        month = month_of(self.clock.now())
        row = {
            "user_id": user_id,
            "month": month,
            "offering": offering[:100],
            "role": role[:32],
            "calls": 1,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
        }
        with self.db.transaction() as connection:
            statement = insert_for(connection.dialect.name)(_TABLE).values(row)
            excluded = statement.excluded
            table = _TABLE.c
            connection.execute(
                statement.on_conflict_do_update(
                    index_elements=["user_id", "month", "offering", "role"],
                    set_={
                        "calls": table.calls + excluded.calls,
                        "prompt_tokens": table.prompt_tokens + excluded.prompt_tokens,
                        "completion_tokens": table.completion_tokens + excluded.completion_tokens,
                    },
                )
            )
        with self._lock:
            known = self._figures.get(user_id)
            if known is not None and known[0] == month:
                used = known[2] + prompt_tokens + completion_tokens
                self._figures[user_id] = (month, known[1], used, known[3])

    def budget(self, user_id: str, *, fresh: bool = False) -> Budget:
        """The user's budget this month, from this process's figure when it is recent."""
        now = self.clock.now()
        month = month_of(now)
        with self._lock:
            known = self._figures.get(user_id)
        recent = known is not None and time.monotonic() - known[3] < self.cache_seconds
        with self.db.session() as db:
            # The limit is read every time (one row by its key): an administrator's change
            # holds at once in every process. Only the month's sum is kept a while.
            own = db.scalar(select(User.monthly_token_budget).where(User.id == user_id))
            limit = effective_limit(own, self.default_budget)
            if fresh or known is None or not recent or known[0] != month:
                known = (month, limit, used_in(db, user_id, month), time.monotonic())
                with self._lock:
                    self._figures[user_id] = known
        return Budget(limit, known[2], resets_at(now))

    def check(self, user_id: str) -> None:
        """BudgetExceeded when the user may not make another model call this month."""
        budget = self.budget(user_id)
        if budget.exceeded:
            raise BudgetExceeded(budget, self.clock.now())

    def allows(self, user_id: str) -> bool:
        """Whether a background job may call the model for the user (one that may not
        waits, or does without)."""
        return not self.budget(user_id).exceeded

    def forget(self, user_id: str) -> None:
        """The user's budget changed: read it again on the next check (in this process)."""
        with self._lock:
            self._figures.pop(user_id, None)


def used_in(db: Session, user_id: str, month: str) -> int:
    total = db.scalar(
        select(
            func.coalesce(func.sum(TokenUsage.prompt_tokens + TokenUsage.completion_tokens), 0)
        ).where(TokenUsage.user_id == user_id, TokenUsage.month == month)
    )
    return int(total or 0)


# -- reports --------------------------------------------------------------------------------


def _line(row: TokenUsage) -> UsageLine:
    return {
        "offering": row.offering,
        "role": row.role,
        "calls": row.calls,
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "total_tokens": row.prompt_tokens + row.completion_tokens,
    }


def _totals(lines: list[UsageLine]) -> UsageTotals:
    return {
        "calls": sum(line["calls"] for line in lines),
        "prompt_tokens": sum(line["prompt_tokens"] for line in lines),
        "completion_tokens": sum(line["completion_tokens"] for line in lines),
        "total_tokens": sum(line["total_tokens"] for line in lines),
    }


def month_report(
    db: Session, user_id: str, month: str, limit: int | None, now: datetime
) -> MonthReport:
    """A user's month: totals, per offering and role, and the budget (for `GET /me/usage`)."""
    rows = db.scalars(
        select(TokenUsage)
        .where(TokenUsage.user_id == user_id, TokenUsage.month == month)
        .order_by(TokenUsage.offering, TokenUsage.role)
    ).all()
    lines = [_line(row) for row in rows]
    totals = _totals(lines)
    budget = Budget(limit, totals["total_tokens"], resets_at(now))
    return {"month": month, **totals, "by_offering": lines, "budget": budget.to_dict()}


def my_usage(meter: TokenMeter, user_id: str) -> MonthReport:
    """This month's tokens of a user and their budget, read now (not from the cache)."""
    now = meter.clock.now()
    with meter.db.session() as db:
        own = db.scalar(select(User.monthly_token_budget).where(User.id == user_id))
        return month_report(
            db, user_id, month_of(now), effective_limit(own, meter.default_budget), now
        )


def all_usage(meter: TokenMeter, month: str | None = None) -> AllUsage:
    """Every user's tokens in `month` (default: this one), per offering and role, with their
    budget: the administrators' view. Users who used nothing are listed with zeros."""
    now = meter.clock.now()
    month = month or month_of(now)
    with meter.db.session() as db:
        users = db.execute(
            select(User.id, User.username, User.monthly_token_budget).order_by(User.username)
        ).all()
        rows = db.scalars(
            select(TokenUsage)
            .where(TokenUsage.month == month)
            .order_by(TokenUsage.offering, TokenUsage.role)
        ).all()
    by_user: dict[str, list[UsageLine]] = {}
    for row in rows:
        by_user.setdefault(row.user_id, []).append(_line(row))
    # A past month's budget has reset: its figures are shown against the limit set now.
    reset = resets_at(datetime.strptime(month + "-01", "%Y-%m-%d").replace(tzinfo=UTC))
    listed: list[UserUsage] = []
    for user_id, username, own in users:
        lines = by_user.get(user_id, [])
        totals = _totals(lines)
        limit = effective_limit(own, meter.default_budget)
        budget = Budget(limit, totals["total_tokens"], reset)
        listed.append(
            {
                "user_id": user_id,
                "username": username,
                "monthly_token_budget": own,
                **totals,
                "by_offering": lines,
                "budget": budget.to_dict(),
            }
        )
    return {"month": month, "users": listed}


def set_budget(db: Session, user: User, budget: int | None) -> None:
    """An administrator's budget for a user: tokens a month, 0 for none, None for the
    deployment's default (MONTHLY_TOKEN_BUDGET). The caller forgets the meter's figure."""
    if budget is not None and budget < 0:
        raise ValueError("a budget is zero or more tokens")
    user.monthly_token_budget = budget
