"""What shared.llm needs from the runtime: the settings, the database, the offering cache and
the token meter.

The domain packages do not take the whole `Runtime` (shared/runtime.py, the layer above them
all): each names the part it uses in a protocol like this one, one per package, each
extending the one of the package below it. A function typed with it cannot reach for a field
of a higher package without mypy saying so, and its signature says what it touches."""

from __future__ import annotations

from typing import Protocol

from shared.core.settings import Settings
from shared.db.database import Database
from shared.llm.offering_cache import OfferingCache
from shared.llm.usage import TokenMeter


class LlmRuntime(Protocol):
    settings: Settings
    db: Database
    offerings: OfferingCache
    usage: TokenMeter
