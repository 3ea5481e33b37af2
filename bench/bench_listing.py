"""First page of the session listing from the index, against opening every session file.

    .venv/bin/python bench/bench_listing.py [--sessions 10000] [--database-url URL]

Targets: the first page (limit 50, the API default) through shared.sessions.service
.list_sessions has p50 < 10 ms, and is at least 100x faster (p50 against p50) than loading
every file with SessionStore.load and sorting pinned-first / most-recently-updated.
The same page through the Flask test client (GET /api/v1/sessions) is shown for the HTTP
overhead; it has no target of its own.
"""

from __future__ import annotations

import sys
import time

from _common import (
    NS_PER_MS,
    base_parser,
    bench_account,
    make_sessions,
    median,
    ms,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)

from api.app import create_app
from api.context import runtime_of
from shared.core.settings import load_settings
from shared.files.session_store import SessionState, SessionStore
from shared.index import sync
from shared.sessions import service as session_service
from workers.queue import celery_jobs

PAGE = 50
TARGET_P50_MS = 10.0
TARGET_SPEEDUP = 100.0


def open_every_file(store: SessionStore, user_id: str, limit: int = PAGE) -> list[SessionState]:
    """The listing without an index: fold every file, then sort as the API does."""
    states = []
    for session_id, _ in store.scan(user_id):
        state, _ = store.load(user_id, session_id, keep_messages=False)
        if not state.temporary and not state.archived:
            states.append(state)
    states.sort(key=lambda s: (s.pinned, s.updated_at, s.id), reverse=True)
    return states[:limit]


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200, help="timed first-page runs (index)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=5, help="timed open-every-file runs")
    args = parser.parse_args()

    with workspace(args.database_url, keep=args.keep) as ws:
        settings = load_settings(
            {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        )
        app = create_app(settings, jobs_queue=celery_jobs(settings))
        rt = runtime_of(app)
        try:
            principal, token = bench_account(rt)
            user_id = principal.user_id
            print_header(
                "bench_listing",
                ws,
                f"{args.sessions} sessions, locks: {type(rt.locks).__name__}",
            )

            data = make_sessions(rt.store, user_id, args.sessions)
            started = time.perf_counter()
            with rt.db.session() as db:
                report = sync.reconcile_user(db, rt.store, user_id)
            indexed = time.perf_counter() - started
            print(
                f"   data: {data.sessions} files ({data.bytes_on_disk / 1e6:.1f} MB; "
                f"{data.pinned} pinned, {data.archived} archived, {data.temporary} temporary) "
                f"written in {data.seconds:.1f} s; reconcile_user indexed {report.reread} "
                f"in {indexed:.2f} s"
            )

            client = app.test_client()
            headers = {"Authorization": f"Bearer {token}"}
            url = f"/api/v1/sessions?limit={PAGE}"

            def service_page() -> list[str]:
                rows, _ = session_service.list_sessions(rt, principal, limit=PAGE)
                return [r.id for r in rows]

            def http_page() -> list[str]:
                response = client.get(url, headers=headers)
                if response.status_code != 200:
                    raise SystemExit(f"GET {url} answered {response.status_code}")
                return [item["id"] for item in response.get_json()["items"]]

            # The three ways must agree before any of them is timed.
            expected = [s.id for s in open_every_file(rt.store, user_id)]
            if service_page() != expected or http_page() != expected:
                print("FAIL: the index's first page differs from the files' first page")
                return 1

            for _ in range(args.warmup):
                service_page()
                http_page()
            service_ns: list[int] = []
            http_ns: list[int] = []
            # Interleaved (order alternating) so both see the same machine noise.
            for i in range(args.runs):
                pair = ((service_page, service_ns), (http_page, http_ns))
                for fn, sink in pair if i % 2 == 0 else pair[::-1]:
                    t0 = time.perf_counter_ns()
                    fn()
                    sink.append(time.perf_counter_ns() - t0)

            open_every_file(rt.store, user_id)  # warm-up (page cache, imports)
            baseline_ns: list[int] = []
            for _ in range(args.baseline_runs):
                t0 = time.perf_counter_ns()
                open_every_file(rt.store, user_id)
                baseline_ns.append(time.perf_counter_ns() - t0)
        finally:
            rt.close()

    svc_p50, http_p50, base_p50 = median(service_ns), median(http_ns), median(baseline_ns)
    print()
    print_table(
        ["first page (limit 50)", "runs", "p50 ms", "p99 ms", "max ms"],
        [
            [
                "list_sessions (index)",
                str(len(service_ns)),
                ms(svc_p50),
                ms(percentile(service_ns, 99)),
                ms(max(service_ns)),
            ],
            [
                "GET /api/v1/sessions (test client)",
                str(len(http_ns)),
                ms(http_p50),
                ms(percentile(http_ns, 99)),
                ms(max(http_ns)),
            ],
            [
                f"open every file ({args.sessions}) + sort",
                str(len(baseline_ns)),
                ms(base_p50),
                ms(percentile(baseline_ns, 99)) + "*",
                ms(max(baseline_ns)),
            ],
        ],
    )
    print(f"   * p99 of {len(baseline_ns)} runs is their maximum")
    speedup = base_p50 / svc_p50
    print(
        f"   speedup, p50 open-every-file / p50 index: {speedup:,.0f}x "
        f"(through HTTP: {base_p50 / http_p50:,.0f}x); "
        f"HTTP overhead over the service call: {ms(http_p50 - svc_p50)} ms at p50"
    )
    return verdict(
        [
            (
                f"index first page p50 < {TARGET_P50_MS:g} ms "
                f"(measured {svc_p50 / NS_PER_MS:.3f} ms)",
                svc_p50 / NS_PER_MS < TARGET_P50_MS,
            ),
            (
                f">= {TARGET_SPEEDUP:g}x faster than opening every file (measured {speedup:,.0f}x)",
                speedup >= TARGET_SPEEDUP,
            ),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
