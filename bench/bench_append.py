"""Durable append of one message against a bare write + fsync of the same bytes.

    .venv/bin/python bench/bench_append.py [--appends 500] [--database-url URL]

Target: SessionStore.append of one ~300-byte message record (flock on the session file,
torn-line check, write, fsync) has a median within 1.5x of `os.write + os.fsync` of the same
bytes to a file that stays open in the same directory. Session appends take no named lock
(no FileLocks, no Redis): the flock on the file is the only lock, so there is one comparison.
All variants run interleaved in the same loop, their order rotating.

Rows without a target, to show where the time goes: durable_append called directly (the
same write without the store's path checks), the flock alone (open + flock + close), and
session_service.append_records (the API's write path: index lookup, append, index row update
in the database given by --database-url).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    NS_PER_MS,
    base_parser,
    median,
    ms,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)

from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.core.settings import load_settings
from shared.files.filestore import durable_append, encode_records, locked
from shared.runtime import Runtime
from shared.sessions import service as session_service

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


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=500, help="timed appends per variant")
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    with workspace(args.database_url, keep=args.keep) as ws:
        print_header("bench_append", ws, f"{args.appends} appends per variant")
        env = {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        rt = Runtime.build(load_settings(env))
        try:
            user_id = uuid.uuid4().hex
            principal = Principal(user_id, "bench", False, "web", "")
            store_session, _ = rt.store.create(user_id, source="web", title="append target")
            raw_session, _ = rt.store.create(user_id, source="web", title="durable_append")
            api_session = session_service.create_session(
                rt, principal, rt.memory, title="service path"
            )
            raw_path = rt.store.path(user_id, raw_session.id)
            bare_path = Path(rt.store.sessions_dir(user_id)) / "bare.bin"
            bare_fd = os.open(bare_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            payload: dict[str, Any] = {}

            def bare() -> None:
                os.write(bare_fd, payload["bytes"])
                os.fsync(bare_fd)

            def store_append() -> None:
                rt.store.append(user_id, store_session.id, [payload["record"]])

            def direct() -> None:
                durable_append(raw_path, payload["bytes"])

            def lock_only() -> None:
                with locked(raw_path):
                    pass

            def service_append() -> None:
                session_service.append_records(rt, principal, api_session.id, [payload["record"]])

            variants: list[tuple[str, Callable[[], None]]] = [
                ("bare", bare),
                ("append", store_append),
                ("direct", direct),
                ("lock", lock_only),
                ("service", service_append),
            ]
            times: dict[str, list[int]] = {name: [] for name, _ in variants}
            try:
                for i in range(args.warmup + args.appends):
                    record = message_record(i)
                    payload["record"] = record
                    payload["bytes"] = encode_records([record])
                    shift = i % len(variants)  # rotate the order: no variant always goes first
                    for name, fn in variants[shift:] + variants[:shift]:
                        t0 = time.perf_counter_ns()
                        fn()
                        elapsed = time.perf_counter_ns() - t0
                        if i >= args.warmup:
                            times[name].append(elapsed)
            finally:
                os.close(bare_fd)
            record_bytes = len(payload["bytes"])
            held = len(rt.store.load(user_id, store_session.id)[0].messages)
        finally:
            rt.close()

    if held != args.appends + args.warmup:
        print(f"FAIL: the session holds {held} messages, {args.appends + args.warmup} expected")
        return 1
    names = {
        "bare": "os.write + os.fsync (bare)",
        "append": "SessionStore.append (target)",
        "direct": "  durable_append, called directly",
        "lock": "  flock alone (open + flock + close)",
        "service": "  session_service.append_records",
    }
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
    print()
    print_table(["variant", "n", "p50 ms", "p99 ms", "p50 / bare"], rows)
    append_p50 = median(times["append"])
    ratio = append_p50 / bare_p50
    print(
        f"   record: {record_bytes} bytes; ratio of medians append/bare = {ratio:.2f}; "
        f"overhead over bare at p50: {ms(append_p50 - bare_p50)} ms"
    )
    print()
    return verdict(
        [
            (
                f"append p50 within {TARGET_RATIO}x of bare (measured {ratio:.2f}x, "
                f"{append_p50 / NS_PER_MS:.3f} vs {bare_p50 / NS_PER_MS:.3f} ms)",
                ratio <= TARGET_RATIO,
            )
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
