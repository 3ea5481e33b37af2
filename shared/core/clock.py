"""Time as Eonyx stores and shows it: aware UTC datetimes, ISO 8601 with a `Z` on the wire.

`Clock` is the time a runtime goes by where a decision depends on it (a token's expiry, a
lost job's age): the runtime carries one (`rt.clock`), and a test replaces it to move time
instead of patching a module's global. Stamps that only record when something happened call
`utcnow` directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
