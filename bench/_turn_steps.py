"""Where a turn's time goes, measured inside one process: bench_turn's breakdown.

The app is built here (`create_app`) and served from a thread; a `Recorder` times the steps of
a turn by wrapping what the turn code calls (module attributes and the runtime's objects; a
step the code does not have is left out) and counts, per request, the database transactions,
statements and pool checkouts (SQLAlchemy events), the Redis commands (the runtime's client)
and the jobs sent. Requests come one at a time, so one label and one counter are enough.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

# (kind, title) of the timed steps of a turn, in the order they run.
STEPS = [
    ("auth", "authenticate (token check, own transaction)"),
    ("run_turn", "run_turn"),
    ("get_session", "  get_session (ownership check)"),
    ("offering", "  models.offering_for"),
    ("lock_acquire", "  turn lock acquire"),
    ("load", "  SessionStore.load (read + fold)"),
    ("store_append_1", "  SessionStore.append, user message (write + fsync)"),
    ("assemble", "  assemble_context (summarize=True)"),
    ("llm", "  model call (from inside)"),
    ("store_append_2", "  SessionStore.append, answer"),
    ("index", "  index update (own transaction)"),
    ("lock_release", "  turn lock release"),
    ("extraction", "  memory extraction hint"),
]
# Per-request counts, and what they mean.
COUNTS = [
    ("db_txn", "database transactions"),
    ("db_checkout", "pool checkouts (a ping each on PostgreSQL)"),
    ("db_stmt", "SQL statements"),
    ("redis", "Redis commands"),
    ("jobs", "jobs sent"),
]


class Recorder:
    """Times (ns) and counts of work done in the app's threads, filed under a label."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        # perf_counter_ns: the steps' wall time; thread_time_ns: the CPU the serving thread
        # spent on them (requests come one at a time, so that thread is the request's).
        self.clock = clock
        self.label = ""
        self.recording = False
        self.samples: dict[str, list[int]] = defaultdict(list)
        self.counts: Counter[str] = Counter()

    def add(self, kind: str, elapsed: int) -> None:
        if self.recording:
            self.samples[f"{kind}:{self.label}"].append(elapsed)

    def count(self, kind: str) -> None:
        self.counts[kind] += 1

    def wsgi(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Any]:
        def timed(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            self.counts.clear()
            t0 = self.clock()
            try:
                return app(environ, start_response)
            finally:
                self.add("app", self.clock() - t0)
                for kind, _ in COUNTS:
                    self.add(kind, self.counts[kind])

        return timed

    def call(self, kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(kind, self.clock() - t0)

        return timed


class TimedHold:
    """A turn-lock context manager whose enter and exit are timed."""

    def __init__(self, rec: Recorder, inner: Any) -> None:
        self.rec, self.inner = rec, inner

    def __enter__(self) -> Any:
        t0 = self.rec.clock()
        try:
            return self.inner.__enter__()
        finally:
            self.rec.add("lock_acquire", self.rec.clock() - t0)

    def __exit__(self, *exc_info: Any) -> Any:
        t0 = self.rec.clock()
        try:
            return self.inner.__exit__(*exc_info)
        finally:
            self.rec.add("lock_release", self.rec.clock() - t0)


class CountedCursor:
    """A driver cursor that counts its statements."""

    def __init__(self, cursor: Any, count: Callable[[], None]) -> None:
        self._cursor, self._count = cursor, count

    def execute(self, *args: Any) -> Any:
        self._count()
        return self._cursor.execute(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def instrument(rec: Recorder, rt: Any) -> None:
    """Wrap what a turn calls, and count what it sends to the database and Redis."""
    import api.context
    import shared.chat.turn_rounds
    import shared.chat.turns
    import shared.llm.models
    import shared.memory.extraction
    import shared.sessions.service

    targets = [
        (api.context, "authenticate", "auth"),
        (shared.chat.turns, "run_turn", "run_turn"),
        (shared.sessions.service, "get_session", "get_session"),
        (shared.llm.models, "offering_for", "offering"),
        (rt.store, "load", "load"),
        (rt.store, "append", "store_append"),
        (shared.chat.turn_rounds, "assemble_context", "assemble"),
        (rt.llm, "complete", "llm"),
        (shared.sessions.service, "index_appended", "index"),
        (shared.memory.extraction, "maybe_enqueue_extraction", "extraction"),
    ]
    for owner, attr, kind in targets:
        if callable(getattr(owner, attr, None)):
            setattr(owner, attr, rec.call(kind, getattr(owner, attr)))
    hold = rt.locks.hold
    rt.locks.hold = lambda name, **kw: TimedHold(rec, hold(name, **kw))

    driver_transaction = rt.db.driver_transaction

    @contextmanager
    def counted_transaction() -> Iterator[Any]:
        """A driver transaction and its statements, which SQLAlchemy's events do not see."""
        rec.count("db_txn")
        with driver_transaction() as cursor:
            yield CountedCursor(cursor, lambda: rec.count("db_stmt"))

    setattr(rt.db, "driver_transaction", counted_transaction)  # noqa: B010
    engine = rt.db.engine
    event.listen(engine, "begin", lambda *_: rec.count("db_txn"))
    event.listen(engine, "checkout", lambda *_: rec.count("db_checkout"))
    event.listen(engine, "before_cursor_execute", lambda *_: rec.count("db_stmt"))
    if rt.redis is not None:
        send = rt.redis.execute_command

        def counted(*args: Any, **kwargs: Any) -> Any:
            rec.count("redis")
            return send(*args, **kwargs)

        rt.redis.execute_command = counted
    if rt.jobs is not None:
        enqueue = rt.jobs.enqueue

        def sent(*args: Any, **kwargs: Any) -> Any:
            rec.count("jobs")
            return enqueue(*args, **kwargs)

        rt.jobs.enqueue = sent


def breakdown(s: dict[str, list[int]], label: str) -> dict[str, list[int]]:
    """Per-turn samples of each step of one kind of turn, with the remainders computed."""
    out = {kind: list(s.get(f"{kind}:{label}", [])) for kind, _ in STEPS}
    both = s.get(f"store_append:{label}", [])
    out["store_append_1"], out["store_append_2"] = both[0::2], both[1::2]
    out["app"] = list(s.get(f"app:{label}", []))
    n = len(out["app"])
    inner = [k for k, _ in STEPS[2:] if out[k]]
    if n and all(len(out[k]) == n for k in ["auth", "run_turn", *inner]):
        out["rest_run_turn"] = [
            out["run_turn"][i] - sum(out[k][i] for k in inner) for i in range(n)
        ]
        out["rest_app"] = [out["app"][i] - out["auth"][i] - out["run_turn"][i] for i in range(n)]
    return out
