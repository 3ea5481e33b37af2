"""The index write of every turn, alone: thread CPU per write, one process and under contention.

    .venv/bin/python bench/bench_index_write.py [--writes 1000] [--sessions 300]
        [--shapes 1x1,2x8] [--database-url URL]

A turn ends with `shared.sessions.service.index_appended`: its two new messages folded into
the session's row and their text made searchable. Here that call runs on its own, for one
user's sessions (created through `sync.record`), two messages a write, in the shapes given:
PxT is P processes of T threads each, all writing the same database, as `eonyx serve`'s
workers do under 16 clients. It prints, per shape, the thread CPU and the wall time per write
(means per thread, medians over the threads). No target: it shows what a change to the
index write costs or saves (issue 24); run it before and after, on the same machine.
"""

from __future__ import annotations

import multiprocessing
import random
import statistics
import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any

from _common import WORDS, base_parser, print_header, print_table, workspace
from sqlalchemy import text

from shared.core.clock import isoformat, utcnow
from shared.db.database import Database
from shared.files.session_store import FileInfo, SessionState
from shared.index import sync
from shared.sessions.service import index_appended

START_SIZE = 100  # the file size each row starts at; every write adds TURN_BYTES
TURN_BYTES = 500


def prepare(database_url: str, user_id: str, session_ids: list[str]) -> None:
    database = Database(database_url)
    now = utcnow()
    with database.transaction() as db:
        db.execute(
            text("INSERT INTO index_state (user_id, built_at) VALUES (:u, :t)"),
            {"u": user_id, "t": now},
        )
        for session_id in session_ids:
            state = SessionState(session_id, user_id, "web", now, now)
            sync.record(db, state, FileInfo(START_SIZE, 0))
    database.dispose()


def writer(
    database_url: str, user_id: str, session_ids: list[str], writes: int, threads: int, out: Any
) -> None:
    """One process: `threads` threads, each writing `writes` times to its own sessions."""
    rt = SimpleNamespace(db=Database(database_url))
    per_thread: list[tuple[float, float]] = []

    def run(mine: list[str]) -> None:
        rng, sizes = random.Random(), dict.fromkeys(mine, START_SIZE)
        cpu = wall = 0
        for n in range(writes):
            session_id = mine[n % len(mine)]
            records = [
                {
                    "type": "message",
                    "id": uuid.uuid4().hex,
                    "role": role,
                    "content": " ".join(rng.choices(WORDS, k=words)),
                    "created_at": isoformat(utcnow()),
                }
                for role, words in (("user", 12), ("assistant", 30))
            ]
            before = sizes[session_id]
            sizes[session_id] = before + TURN_BYTES
            info = FileInfo(before + TURN_BYTES, n)
            started_cpu, started = time.thread_time_ns(), time.perf_counter_ns()
            index_appended(rt, user_id, session_id, records, before, info)  # type: ignore[arg-type]
            cpu += time.thread_time_ns() - started_cpu
            wall += time.perf_counter_ns() - started
        per_thread.append((cpu / writes / 1000, wall / writes / 1000))

    pool = [threading.Thread(target=run, args=(session_ids[k::threads],)) for k in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    rt.db.dispose()
    out.put(per_thread)


def run_shape(
    database_url: str, processes: int, threads: int, writes: int, sessions: int
) -> list[str]:
    user_id = uuid.uuid4().hex
    session_ids = [uuid.uuid4().hex for _ in range(max(sessions, processes * threads))]
    prepare(database_url, user_id, session_ids)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    workers = [
        context.Process(
            target=writer,
            args=(database_url, user_id, session_ids[k::processes], writes, threads, out),
        )
        for k in range(processes)
    ]
    for worker in workers:
        worker.start()
    results = [row for _ in workers for row in out.get()]
    for worker in workers:
        worker.join()
    return [
        f"{processes}x{threads}",
        str(processes * threads * writes),
        f"{statistics.median(r[0] for r in results):.0f}",
        f"{statistics.median(r[1] for r in results):.0f}",
    ]


def main() -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000, help="per thread")
    parser.add_argument("--sessions", type=int, default=300, help="of the one user")
    parser.add_argument("--shapes", default="1x1,2x8", help="processes x threads, comma-separated")
    args = parser.parse_args()
    with workspace(args.database_url, keep=args.keep) as ws:
        print_header("bench_index_write", ws, f"{args.writes} writes per thread")
        rows = []
        for shape in args.shapes.split(","):
            processes, threads = (int(part) for part in shape.split("x"))
            rows.append(run_shape(ws.database_url, processes, threads, args.writes, args.sessions))
    print_table(["processes x threads", "writes", "thread CPU us/write", "wall us/write"], rows)
    print("   each thread's mean per write, the median over the threads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
