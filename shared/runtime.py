"""The runtime: the long-lived objects built once from the settings.

A Flask app, a Celery worker, a CLI command and a test each build one `Runtime` and pass it
to the domain functions; nothing in shared/ reaches for globals.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import httpx
import redis

from shared.accounts.live_settings import LiveSettings
from shared.accounts.throttle import Throttle
from shared.accounts.token_cache import TokenCache
from shared.chat import context
from shared.core.clock import Clock, SystemClock
from shared.core.job_names import JobQueue
from shared.core.settings import Settings
from shared.db.database import Database
from shared.files.permissions import make_private_dirs
from shared.files.session_store import SessionStore
from shared.files.usage import UsageMeter
from shared.infra import event_bus
from shared.infra.embedded_redis import resolve_redis_url
from shared.infra.locks import FileLocks, Locks, RedisLocks
from shared.llm.client import LLMClient, ModelClient
from shared.llm.offering_cache import OfferingCache
from shared.llm.tools import ToolRegistry
from shared.llm.usage import TokenMeter
from shared.memory import extraction
from shared.memory.files import MemoryStore
from shared.memory.tools import register_memory_tools
from shared.sessions import title_job
from shared.sessions.turn_hooks import TurnHooks

if TYPE_CHECKING:
    from shared.integrations.teams.channel import TeamsChannel

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    settings: Settings
    db: Database
    store: SessionStore
    locks: Locks
    redis: redis.Redis | None
    llm: ModelClient
    tools: ToolRegistry
    memory: MemoryStore
    offerings: OfferingCache
    throttle: Throttle  # failed-login counters (Redis, or per process without it)
    tokens: TokenCache  # recently checked tokens, forgotten when `auth_changed` says
    usage: TokenMeter  # each user's model tokens, counted by `llm`, and their budget
    live_settings: LiveSettings  # the switches an administrator sets at run time
    turn_hooks: TurnHooks  # what follows a turn, registered by its packages (`build`)
    events: event_bus.EventHub | None = None  # with Redis: the process's events sockets' feed
    jobs: JobQueue | None = None
    teams: TeamsChannel | None = None  # with TEAMS_APP_ID: token checks and reply posting
    clock: Clock = field(default_factory=SystemClock)  # tests replace it to move time
    closed: bool = False

    @classmethod
    def build(
        cls, settings: Settings, jobs: JobQueue | None = None, *, redis_url: str | None = None
    ) -> Runtime:
        """`redis_url`: pass it when the caller resolved it already (the worker did, for its
        broker); otherwise it is resolved here."""
        make_private_dirs(settings.data_dir)
        redis_url = redis_url or resolve_redis_url(settings)
        client = redis_client(redis_url) if redis_url else None
        locks: Locks = RedisLocks(client) if client else FileLocks(settings.data_dir / "locks")
        database = Database(settings.database_url)
        live_settings = LiveSettings(settings, database, client)
        memory = MemoryStore(settings, locks, live=live_settings.settings)
        memory.identity()  # the file is written at start when it is missing
        tools = ToolRegistry()
        register_memory_tools(tools, memory, live_settings.settings)
        meter = TokenMeter(database, settings.monthly_token_budget)
        runtime = cls(
            settings=settings,
            db=database,
            store=SessionStore(
                settings.data_dir,
                cache_bytes=settings.session_cache_bytes,
                usage=UsageMeter(client),
            ),
            locks=locks,
            redis=client,
            llm=LLMClient(
                timeout=httpx.Timeout(
                    settings.llm_read_timeout, connect=settings.llm_connect_timeout
                ),
                retries=settings.llm_max_retries,
                meter=meter,
            ),
            tools=tools,
            memory=memory,
            offerings=OfferingCache(database, client),
            throttle=Throttle(client),
            tokens=TokenCache(client),
            usage=meter,
            live_settings=live_settings,
            turn_hooks=TurnHooks(),
            events=event_bus.EventHub(client) if client else None,
            jobs=jobs,
            teams=_teams_channel(settings),
        )
        runtime.turn_hooks.add(partial(title_job.after_turn, runtime))
        runtime.turn_hooks.add(partial(context.after_turn, runtime))
        runtime.turn_hooks.add(partial(extraction.after_turn, runtime))
        return runtime

    @property
    def identity(self) -> str:
        """The deployment's identity (IDENTITY.md), read again when the file changed."""
        return self.memory.identity()

    def hint(self, job: str, *args: object) -> bool:
        """Send a job that is a hint, not the only record of the work (a periodic sweep
        redoes what a lost job leaves undone): a broker failure is logged, never raised past
        a write that already succeeded. False when it was not sent."""
        if self.jobs is None:
            return False
        try:
            self.jobs.enqueue(job, *args)
        except Exception:  # whatever the broker raises; the sweep catches up
            log.exception("could not send %s%r; a sweep will redo it", job, args)
            return False
        return True

    def auth_changed(self, user_id: str) -> None:
        """Who may act as the user changed (a token revoked, a password changed, the account
        disabled or deleted), and it is committed: this process forgets the user's tokens at
        once, and every other process and open event socket hears it over Redis."""
        self.tokens.forget_user(user_id)
        event_bus.publish_auth_change(self.redis, user_id)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections (database pool, model client, Redis). Safe to call twice:
        an app closes its runtime when it is collected and again at process exit."""
        if self.closed:
            return
        self.closed = True
        self.tokens.close()
        if self.events is not None:
            self.events.close()
        self.offerings.close()
        self.live_settings.close()
        self.db.dispose()
        self.llm.close()
        if self.teams is not None:
            self.teams.close()
        if self.redis is not None:
            self.redis.close()


REDIS_CONNECTIONS = 512  # per process; Redis itself takes 10,000 clients by default
REDIS_WAIT_SECONDS = 10.0


def redis_client(url: str) -> redis.Redis:
    """A client whose pool waits for a free connection rather than failing: a process holds
    thousands of requests at once (gevent), each taking a connection for a moment (a lock,
    a rate-limit count), and redis-py's default pool raises `Too many connections` past 100,
    even on the release of a turn's lock."""
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=REDIS_CONNECTIONS, timeout=REDIS_WAIT_SECONDS
    )
    return redis.Redis(connection_pool=pool)


def _teams_channel(settings: Settings) -> TeamsChannel | None:
    """Imported only where Teams is on: the Activity schema costs a quarter second to load."""
    if not settings.teams_app_id:
        return None
    from shared.integrations.teams.channel import TeamsChannel

    return TeamsChannel(settings)
