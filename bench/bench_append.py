"""Durable append of one message against a bare write + fsync of the same bytes.

    .venv/bin/python bench/bench_append.py [--appends 500] [--database-url URL]
                                           [--redis-url redis://127.0.0.1:6379/14]

Target: SessionStore.append of one ~300-byte message record (per-session lock, torn-line
check, write, fsync) has a median within 1.5x of `os.write + os.fsync` of the same bytes to
a file on the same disk, for each lock kind: FileLocks (no Redis), RedisLocks against
--redis-url when it answers, and RedisLocks on an embedded Redis (unix socket, what
`eonyx serve` runs without REDIS_URL). All variants run interleaved in the same loop.

Rows without a target, to show where the time goes: the lock alone (acquire + release),
durable_append without the lock, and session_service.append_records (the API's write path:
index lookup, append, index row update in the database given by --database-url).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from _common import (
    NS_PER_MS,
    Workspace,
    base_parser,
    median,
    ms,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)

from shared import session_service
from shared.accounts import Principal
from shared.embedded_redis import EmbeddedRedis
from shared.filestore import durable_append, encode_records, locked
from shared.runtime import Runtime
from shared.sessions import isoformat, new_message_id, utcnow
from shared.settings import load_settings

TARGET_RATIO = 1.5
RECORD_BYTES = 300


def message_record(i: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "message",
        "id": new_message_id(),
        "role": "user" if i % 2 == 0 else "assistant",
        "content": "",
        "created_at": isoformat(utcnow()),
    }
    filler = RECORD_BYTES - len(encode_records([record]))
    record["content"] = ("lorem ipsum dolor sit amet " * 20)[: max(0, filler)]
    return record


def redis_answers(url: str) -> str | None:
    try:
        redis.Redis.from_url(url, socket_timeout=2).ping()
        return None
    except (redis.RedisError, OSError) as exc:
        return type(exc).__name__


def run_lock_kind(
    ws: Workspace, label: str, redis_url: str | None, appends: int, warmup: int
) -> dict[str, list[int]]:
    """Interleaved timings (ns) of every variant for one lock kind."""
    env = {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
    if redis_url:
        env["REDIS_URL"] = redis_url
    rt = Runtime.build(load_settings(env))
    try:
        user_id = uuid.uuid4().hex
        principal = Principal(user_id, "bench", False, "web", "")
        store_session, _ = rt.store.create(user_id, source="web", title="append target")
        raw_session, _ = rt.store.create(user_id, source="web", title="no lock")
        api_session = session_service.create_session(rt, principal, title="service path")
        raw_path = rt.store.path(user_id, raw_session.id)
        bare_path = Path(rt.store.sessions_dir(user_id)) / f"bare-{label.split()[0]}.bin"
        bare_fd = os.open(bare_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

        payload: dict[str, Any] = {}

        def bare() -> None:
            os.write(bare_fd, payload["bytes"])
            os.fsync(bare_fd)

        def store_append() -> None:
            rt.store.append(user_id, store_session.id, [payload["record"]])

        def no_lock() -> None:
            durable_append(raw_path, payload["bytes"])

        def lock_only() -> None:
            with locked(raw_path):
                pass

        def service_append() -> None:
            session_service.append_records(rt, principal, api_session.id, [payload["record"]])

        variants: list[tuple[str, Callable[[], None]]] = [
            ("bare", bare),
            ("append", store_append),
            ("no_lock", no_lock),
            ("lock", lock_only),
            ("service", service_append),
        ]
        times: dict[str, list[int]] = {name: [] for name, _ in variants}
        for i in range(warmup + appends):
            record = message_record(i)
            payload["record"] = record
            payload["bytes"] = encode_records([record])
            shift = i % len(variants)  # rotate the order so no variant always goes first
            for name, fn in variants[shift:] + variants[:shift]:
                t0 = time.perf_counter_ns()
                fn()
                elapsed = time.perf_counter_ns() - t0
                if i >= warmup:
                    times[name].append(elapsed)
        os.close(bare_fd)
        times["_bytes"] = [len(payload["bytes"])]
        times["_lines"] = [len(rt.store.load(user_id, store_session.id)[0].messages)]
        return times
    finally:
        rt.close()


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=500, help="timed appends per variant")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--no-redis", action="store_true", help="FileLocks only")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded Redis")
    args = parser.parse_args()

    results: list[tuple[str, dict[str, list[int]] | None, str]] = []
    with workspace(args.database_url, keep=args.keep) as ws:
        print_header("bench_append", ws, f"{args.appends} appends per variant")
        kinds: list[tuple[str, str | None, str]] = [("FileLocks", None, "")]
        if not args.no_redis:
            problem = redis_answers(args.redis_url)
            kinds.append(
                (f"RedisLocks {args.redis_url}", None if problem else args.redis_url, problem or "")
            )
        embedded = None
        if not args.no_embedded:
            embedded = EmbeddedRedis(ws.root / "embedded")
            kinds.append(("RedisLocks embedded (unix socket)", embedded.start(), ""))
        try:
            for label, url, problem in kinds:
                if label.startswith("RedisLocks") and url is None:
                    results.append((label, None, f"skipped: not reachable ({problem})"))
                    continue
                times = run_lock_kind(ws, label, url, args.appends, args.warmup)
                if times["_lines"][0] != args.appends + args.warmup:
                    print(f"FAIL: {label}: the session holds {times['_lines'][0]} messages")
                    return 1
                results.append((label, times, ""))
        finally:
            if embedded is not None:
                embedded.stop()

    checks: list[tuple[str, bool]] = []
    names = {
        "bare": "os.write + os.fsync (bare)",
        "append": "SessionStore.append (target)",
        "no_lock": "  durable_append, no lock",
        "lock": "  file lock (flock) acquire + release only",
        "service": "  session_service.append_records",
    }
    for label, times, note in results:
        print()
        print(f"-- {label}")
        if times is None:
            print(f"   {note}")
            continue
        bare_p50 = median(times["bare"])
        rows = []
        for key, title in names.items():
            samples = times[key]
            p50 = median(samples)
            rows.append(
                [
                    title,
                    str(len(samples)),
                    ms(p50),
                    ms(percentile(samples, 99)),
                    f"{p50 / bare_p50:.2f}x" if key != "lock" else "",
                ]
            )
        print_table(["variant", "n", "p50 ms", "p99 ms", "p50 / bare"], rows)
        ratio = median(times["append"]) / bare_p50
        print(
            f"   record: {times['_bytes'][0]} bytes; ratio of medians append/bare = {ratio:.2f}; "
            f"overhead over bare at p50: {ms(median(times['append']) - bare_p50)} ms"
        )
        checks.append(
            (
                f"{label}: append p50 within {TARGET_RATIO}x of bare (measured {ratio:.2f}x, "
                f"{median(times['append']) / NS_PER_MS:.3f} vs {bare_p50 / NS_PER_MS:.3f} ms)",
                ratio <= TARGET_RATIO,
            )
        )
    print()
    return verdict(checks)


if __name__ == "__main__":
    sys.exit(main())
