"""Index rebuild rate: drop the whole index, then rebuild it from the session files.

    .venv/bin/python bench/bench_rebuild.py [--sessions 10000] [--database-url URL]

Target: a full rebuild (shared.index.drop, then shared.index.rebuild, every file re-read)
runs at >= 2,000 sessions/s, median of 3 runs. Also shown: a no-change reconcile (the
periodic job when nothing changed: every file is stat'ed, none is re-read), which has no
target of its own. The files are in the page cache (they were just written), so this is
the warm-cache rate; a cold cache adds the disk's read time.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
import uuid

from _common import base_parser, make_sessions, median, print_header, print_table, verdict
from _common import workspace as make_workspace

from shared.core.settings import load_settings
from shared.index import sync
from shared.runtime import Runtime

TARGET_RATE = 2_000.0


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions in all")
    parser.add_argument("--users", type=int, default=1, help="spread the sessions over N users")
    parser.add_argument("--runs", type=int, default=3, help="timed drop+rebuild runs")
    parser.add_argument("--noop-runs", type=int, default=5, help="timed no-change reconciles")
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one extra full rebuild"
    )
    args = parser.parse_args()

    with make_workspace(args.database_url, keep=args.keep) as ws:
        settings = load_settings(
            {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        )
        rt = Runtime.build(settings)
        try:
            print_header("bench_rebuild", ws, f"{args.sessions} sessions over {args.users} user(s)")
            per_user = [args.sessions // args.users] * args.users
            per_user[0] += args.sessions - sum(per_user)
            written = 0.0
            size = 0
            for n, count in enumerate(per_user):
                data = make_sessions(rt.store, uuid.uuid4().hex, count, seed=n)
                written += data.seconds
                size += data.bytes_on_disk
            print(
                f"   data: {args.sessions} files ({size / 1e6:.1f} MB) written in {written:.1f} s"
            )

            def timed_rebuild() -> tuple[float, sync.ReconcileReport]:
                t0 = time.perf_counter_ns()
                report = sync.rebuild(rt.db, rt.store)
                return (time.perf_counter_ns() - t0) / 1e9, report

            def drop() -> float:
                t0 = time.perf_counter_ns()
                with rt.db.session() as db:
                    sync.drop(db)
                return (time.perf_counter_ns() - t0) / 1e9

            # Warm-up: the first build (also what `eonyx index rebuild` does on a new database).
            first, report = timed_rebuild()
            if report.reread != args.sessions:
                print(f"FAIL: the first build re-read {report.reread} of {args.sessions} files")
                return 1

            drops: list[float] = []
            full: list[float] = []
            for _ in range(args.runs):
                drops.append(drop())
                seconds, report = timed_rebuild()
                if report.reread != args.sessions or report.scanned != args.sessions:
                    print(f"FAIL: a full rebuild re-read {report.reread} of {args.sessions}")
                    return 1
                full.append(seconds)

            noop: list[float] = []
            for _ in range(args.noop_runs):
                seconds, report = timed_rebuild()
                if report.reread or report.removed or report.scanned != args.sessions:
                    print(f"FAIL: a no-change reconcile re-read {report.reread} files")
                    return 1
                noop.append(seconds)

            if args.profile:
                drop()
                profiler = cProfile.Profile()
                profiler.enable()
                sync.rebuild(rt.db, rt.store)
                profiler.disable()
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
                print(out.getvalue())
        finally:
            rt.close()

    n = args.sessions
    rate = n / median(full)
    noop_rate = n / median(noop)
    print()
    print_table(
        ["phase", "runs", "median s", "min s", "max s", "sessions/s (median)"],
        [
            ["first build (warm-up)", "1", f"{first:.3f}", "", "", f"{n / first:,.0f}"],
            [
                "index.drop",
                str(len(drops)),
                f"{median(drops):.3f}",
                f"{min(drops):.3f}",
                f"{max(drops):.3f}",
                "",
            ],
            [
                "full rebuild after drop",
                str(len(full)),
                f"{median(full):.3f}",
                f"{min(full):.3f}",
                f"{max(full):.3f}",
                f"{rate:,.0f}",
            ],
            [
                "no-change reconcile",
                str(len(noop)),
                f"{median(noop):.3f}",
                f"{min(noop):.3f}",
                f"{max(noop):.3f}",
                f"{noop_rate:,.0f}",
            ],
        ],
    )
    return verdict(
        [
            (
                f"full rebuild >= {TARGET_RATE:,.0f} sessions/s (measured {rate:,.0f}/s)",
                rate >= TARGET_RATE,
            )
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
