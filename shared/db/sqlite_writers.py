"""One SQLite writer at a time, queued rather than polled.

SQLite lets one connection write at a time. A connection that finds the database locked
polls: its busy handler sleeps 1, 2, 5, 10 ... up to 100 ms between tries. Under concurrent
chat turns, each of which writes the index once, those sleeps were most of the tail latency
(p99 in the hundreds of milliseconds, and the rate swinging by half from run to run).

So each connection takes a `WriterGate` before its first write statement and gives it back
when its transaction ends (commit, rollback, close): a thread lock queues the writers of one
process (the next one is woken as soon as the gate is free), and an exclusive `flock` on
`<database>-writers` those of every process on the machine (the HTTP workers and the
background worker; retried every 0.1 to 1 ms). Waiting ends with `database is locked` after
30 s, as the busy handler's does. Reads are not gated (WAL: they never wait for the writer).

Python's sqlite3 opens a transaction before the first INSERT/UPDATE/DELETE, which is where the
gate is taken, so a connection never holds SQLite's write lock without the gate. A writer
that does not use the gate (the sqlite3 shell) is still met by the busy handler.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, Self

WAIT_SECONDS = 30.0  # as long as the busy handler waits (connect_args timeout)
FIRST_RETRY, LONGEST_RETRY = 0.0001, 0.001  # seconds between tries for another process's gate
_READS = frozenset({"SELECT", "PRAGMA", "EXPLAIN", "ANALYZE"})
_WRITE_IN_CTE = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def writes(sql: str) -> bool:
    """Whether a statement may write (anything but a plain read)."""
    verb = sql.lstrip()[:16].split(None, 1)[0].upper() if sql.strip() else ""
    if verb == "WITH":
        return bool(_WRITE_IN_CTE.search(sql))
    return verb not in _READS


def _locked() -> sqlite3.OperationalError:
    return sqlite3.OperationalError(f"database is locked (no turn to write in {WAIT_SECONDS:g} s)")


class WriterGate:
    """The right to write one SQLite database, for this process and every other one."""

    def __init__(self, database_path: str) -> None:
        self._path = f"{database_path}-writers"
        self._pid = -1
        self._lock = threading.Lock()
        self._fd: int | None = None

    def acquire(self) -> None:
        """Wait for the gate, at most WAIT_SECONDS (then `database is locked`, as SQLite
        says it), so a writer that hangs holding it cannot hang every other one for good."""
        if self._pid != os.getpid():  # a forked child: its own lock and its own open file
            self._lock, self._fd, self._pid = threading.Lock(), None, os.getpid()
        deadline = time.monotonic() + WAIT_SECONDS
        if not self._lock.acquire(timeout=WAIT_SECONDS):
            raise _locked()
        try:
            if self._fd is None:
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._lock_file(self._fd, deadline)
        except BaseException:
            self._lock.release()
            raise

    @staticmethod
    def _lock_file(fd: int, deadline: float) -> None:
        """flock without blocking, retried at short intervals: a blocking flock cannot time
        out, and the writer before (in another process) is usually done within a
        millisecond, so the retries stay far below the busy handler's sleeps."""
        pause = FIRST_RETRY
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise _locked() from None
                time.sleep(pause)
                pause = min(2 * pause, LONGEST_RETRY)

    def release(self) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


class _GatedCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        if writes(sql):
            self.connection.enter_writer()  # type: ignore[attr-defined]
        return super().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Self:
        if writes(sql):
            self.connection.enter_writer()  # type: ignore[attr-defined]
        return super().executemany(sql, seq_of_parameters)


def gated_connection(gate: WriterGate) -> type[sqlite3.Connection]:
    """A sqlite3.Connection class (`sqlite3.connect(factory=...)`) whose writers pass `gate`."""

    class GatedConnection(sqlite3.Connection):
        _writing = False

        def cursor(self, factory: Any = None) -> Any:
            return super().cursor(factory or _GatedCursor)

        def enter_writer(self) -> None:
            if not self._writing:
                gate.acquire()
                self._writing = True

        def _ending(self, end: Callable[[], None]) -> None:
            """End the transaction (commit, rollback, close), then give the gate back."""
            try:
                end()
            finally:
                if self._writing:
                    self._writing = False
                    gate.release()

        def commit(self) -> None:
            self._ending(super().commit)

        def rollback(self) -> None:
            self._ending(super().rollback)

        def close(self) -> None:
            self._ending(super().close)

    return GatedConnection
