"""The behaviour switches an administrator changes at run time, over the process's Settings.

Five settings of the environment are defaults an administrator may override while the
deployment runs (`SWITCHES`: the title mode, the user profile, memory extraction and how
often, the agent's memory). What an administrator sets is stored in `deployment_settings`
(one row per switch, its JSON value); a switch without a row has the environment's value.
`LiveSettings.settings()` is the process's `Settings` with the stored values laid over it:
every reader of these switches asks it, never `rt.settings`, so a change applies to the next
request of every API process and worker without a restart.

The overlay is kept in the process, so a read costs no round trip. A change (`change`)
forgets it here and is announced on Redis (`registry.SETTINGS_CHANNEL`); every process hears
it (shared.infra.change_listener) and forgets its own. A process that cannot hear changes
(no Redis, or its connection lost) reads the table again after `UNHEARD_AGE` seconds, and
one that hears them after `MAX_AGE` seconds all the same (a missed message, a row changed by
hand).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypedDict, cast

import redis
from sqlalchemy import delete, select

from shared.core import registry
from shared.core.clock import utcnow
from shared.core.errors import InvalidInput
from shared.core.settings import TITLE_MODES, Settings
from shared.db.database import Database, upsert
from shared.db.orm import DeploymentSetting
from shared.infra.change_listener import ChangeListener

log = logging.getLogger(__name__)
MAX_AGE = 30.0  # seconds a process trusts its overlay while it hears every change
UNHEARD_AGE = 1.0  # ... and while it cannot hear them
MAX_EVERY_N_TURNS = 1000

SWITCHES = (
    "session_title_mode",
    "user_profile_enabled",
    "user_memory_extraction",
    "user_memory_extraction_every_n_turns",
    "agent_memory_enabled",
)


class Switches(TypedDict, total=False):
    """The switches an administrator set (the others follow the environment)."""

    session_title_mode: str
    user_profile_enabled: bool
    user_memory_extraction: bool
    user_memory_extraction_every_n_turns: int
    agent_memory_enabled: bool


class SwitchState(TypedDict):
    value: Any  # the effective value
    source: str  # "environment" or "admin"
    environment: Any  # the environment's value (what a reset goes back to)


def problem(name: str, value: Any) -> str | None:
    """Why `value` cannot be switch `name`'s value (None: it can). None is never a value:
    it means "back to the environment's"."""
    if name not in SWITCHES:
        return f"unknown setting {name!r}; settings: {', '.join(SWITCHES)}"
    if name == "session_title_mode":
        if value not in TITLE_MODES:
            return f"session_title_mode is one of {', '.join(TITLE_MODES)} (null: the default)"
        return None
    if name == "user_memory_extraction_every_n_turns":
        if isinstance(value, bool) or not isinstance(value, int):
            return "user_memory_extraction_every_n_turns is a whole number"
        if not 1 <= value <= MAX_EVERY_N_TURNS:
            return f"user_memory_extraction_every_n_turns is from 1 to {MAX_EVERY_N_TURNS}"
        return None
    if not isinstance(value, bool):
        return f"{name} is true or false"
    return None


class LiveSettings:
    def __init__(self, base: Settings, database: Database, client: redis.Redis | None) -> None:
        self.base = base
        self._db = database
        self._redis = client
        self._lock = threading.Lock()
        self._kept: Settings | None = None
        self._read_at = 0.0
        self.listener = ChangeListener(
            client,
            {registry.SETTINGS_CHANNEL: lambda _suffix, _data: self._forget()},
            on_reset=self._forget,
            name="settings cache",
        )

    def settings(self) -> Settings:
        """The process's Settings with what an administrator set laid over them."""
        max_age = MAX_AGE if self.listener.live else UNHEARD_AGE
        now = time.monotonic()
        with self._lock:
            kept = self._kept
            stamp = self.listener.generation
            if kept is not None and now - self._read_at < max_age:
                return kept
        effective = replace(self.base, **self._stored())
        with self._lock:
            if stamp == self.listener.generation:  # no change heard meanwhile
                self._kept, self._read_at = effective, now
        return effective

    def describe(self) -> dict[str, SwitchState]:
        """Each switch's effective value, where it comes from, and the environment's value
        (read from the database now, not from what the process keeps)."""
        stored = self._stored()
        return {
            name: {
                "value": stored.get(name, getattr(self.base, name)),
                "source": "admin" if name in stored else "environment",
                "environment": getattr(self.base, name),
            }
            for name in SWITCHES
        }

    def change(self, changes: Mapping[str, Any]) -> None:
        """Set each named switch to its value, or back to the environment's with None; every
        process applies it from its next request. Raises InvalidInput (nothing changed) when
        a name or value is not one a switch takes."""
        for name, value in changes.items():
            reason = problem(name, value) if value is not None or name not in SWITCHES else None
            if reason:
                raise InvalidInput(reason, param=name)
        now = utcnow()
        rows = [
            {"name": name, "value": json.dumps(value), "updated_at": now}
            for name, value in changes.items()
            if value is not None
        ]
        cleared = [name for name, value in changes.items() if value is None]
        with self._db.session() as db:
            upsert(db, DeploymentSetting.__table__, rows, ["name"])  # type: ignore[arg-type]
            if cleared:
                db.execute(delete(DeploymentSetting).where(DeploymentSetting.name.in_(cleared)))
        self._forget()
        if self._redis is None:
            return
        try:
            self._redis.publish(registry.SETTINGS_CHANNEL + "changed", "1")
        except redis.RedisError as exc:
            log.warning("other processes see the settings change within %g s: %s", MAX_AGE, exc)

    def close(self) -> None:
        self.listener.close()

    def _forget(self) -> None:
        with self._lock:
            self._kept = None

    def _stored(self) -> Switches:
        """The switches set by an administrator; a row this release cannot use (a value set
        by hand, a switch a later release added) is left out, with a warning."""
        with self._db.session() as db:
            rows = db.execute(select(DeploymentSetting.name, DeploymentSetting.value)).all()
        stored: dict[str, object] = {}
        for name, text in rows:
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            reason = problem(name, value)
            if reason:
                log.warning("run-time setting %s ignored: %s", name, reason)
                continue
            stored[name] = value
        return cast(Switches, stored)  # each value checked by `problem`
