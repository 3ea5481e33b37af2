"""The sidebar at scale: first page and full-text search against a LIKE scan over the text.

    .venv/bin/python bench/bench_search.py [--sessions 10000] [--messages 40] [--database-url URL]

One user with 10,000 sessions of 40 messages (200-800 characters each, a tool call and its
result every 40 turns; times spread over 60 days), written through the real store and indexed
with index.reconcile_user (rows and search text). A rare word is planted in a dozen messages;
the common word is one of the generator's vocabulary, found in most messages.

Targets: the first page (limit 50) through session_service.list_sessions has p50 < 10 ms;
session_service.search_sessions (limit 50: ranking, filters, snippets) has p50 < 50 ms for
the rare and for the common word, and is at least 20x faster (p50 against p50) than a
`LIKE '%word%'` scan over the message text that finds the matching sessions and orders them
as the list does (case-sensitive on PostgreSQL: ILIKE would be several times slower there,
so the baseline gets its best chance; SQLite's LIKE ignores ASCII case). On PostgreSQL the
tables are vacuumed and analysed after the bulk load, as autovacuum would do (until then
the GIN index's pending list is scanned by every search). Also shown,
without a target: the same through HTTP, a LIKE query that reads each session's texts until
the first match, and one that also stops after 50 sessions in list order (unranked; quick
when the word is common, a full scan when it is rare).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from datetime import timedelta

from _common import (
    NS_PER_MS,
    base_parser,
    bench_account,
    make_history,
    median,
    ms,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)
from sqlalchemy import text

from api import create_app
from api.context import runtime_of
from shared import index
from shared.core.clock import isoformat, parse_time
from shared.core.settings import load_settings
from shared.sessions import service as session_service
from workers.queue import celery_jobs

PAGE = 50
RARE, COMMON = "zanzibar", "cache"
PLANTED = 12
TARGET_PAGE_MS, TARGET_SEARCH_MS, TARGET_SPEEDUP = 10.0, 50.0, 20.0


def write_sessions(rt, user_id: str, sessions: int, messages: int, seed: int = 11) -> int:
    """Each session in one durable write (header + messages); returns the bytes on disk."""
    rng = random.Random(seed)
    planted = {(rng.randrange(sessions), rng.randrange(messages)) for _ in range(PLANTED)}
    for n in range(sessions):
        history = make_history(rng, messages)
        shift = timedelta(seconds=rng.uniform(0, 60 * 86400))
        for m, record in enumerate(history):
            record["created_at"] = isoformat(parse_time(record["created_at"]) - shift)
            if (n, m) in planted and record.get("content"):
                words = record["content"].split(" ")
                words.insert(rng.randrange(len(words)), RARE)
                record["content"] = " ".join(words)
        rt.store.create(user_id, source="web", title=f"Chat {n}", records=history)
    directory = rt.store.sessions_dir(user_id)
    return sum(path.stat().st_size for path in directory.iterdir())


LIKE_WAYS = {
    # Every text of the user read and matched: what a LIKE search returning all matching
    # sessions costs without a text index (the target's baseline).
    "scan": "SELECT s.id FROM session_index s JOIN (SELECT DISTINCT t.session_id FROM "
    "session_text t WHERE t.user_id = :u AND t.body LIKE :p) m ON m.session_id = s.id "
    "WHERE s.deleted_at IS NULL ORDER BY s.pinned DESC, s.updated_at DESC, s.id DESC",
    # Per session, its texts until the first match (PostgreSQL runs `IN (subquery)` as such
    # a semi-join; SQLite materialises the subquery, a scan): shown, no target.
    "per session": "SELECT s.id FROM session_index s WHERE s.user_id = :u "
    "AND s.deleted_at IS NULL AND EXISTS (SELECT 1 FROM session_text t WHERE "
    "t.session_id = s.id AND t.body LIKE :p) "
    "ORDER BY s.pinned DESC, s.updated_at DESC, s.id DESC",
    # The same, stopping at the first page: unranked, how a peer pages; no target.
    "first 50": "SELECT s.id FROM session_index s WHERE s.user_id = :u "
    "AND s.deleted_at IS NULL AND EXISTS (SELECT 1 FROM session_text t WHERE "
    "t.session_id = s.id AND t.body LIKE :p) "
    "ORDER BY s.pinned DESC, s.updated_at DESC, s.id DESC LIMIT :n",
}


def like_search(rt, user_id: str, word: str, way: str) -> list[str]:
    """Sessions whose message text has `word`, found with LIKE, ordered as the list is."""
    with rt.db.session() as db:
        rows = db.execute(text(LIKE_WAYS[way]), {"u": user_id, "p": f"%{word}%", "n": PAGE})
        return [row[0] for row in rows]


def timed(fn: Callable[[], object], runs: int) -> list[int]:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return samples


def row(label: str, samples: list[int]) -> list[str]:
    return [
        label,
        str(len(samples)),
        ms(median(samples)),
        ms(percentile(samples, 99)),
        ms(max(samples)),
    ]


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--runs", type=int, default=100, help="timed runs (index paths)")
    parser.add_argument("--baseline-runs", type=int, default=5, help="timed LIKE scans")
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
            print_header("bench_search", ws, f"{args.sessions} sessions x {args.messages} messages")
            started = time.perf_counter()
            size = write_sessions(rt, user_id, args.sessions, args.messages)
            written = time.perf_counter() - started
            started = time.perf_counter()
            with rt.db.session() as db:
                report = index.reconcile_user(db, rt.store, user_id)
                docs = db.execute(text("SELECT count(*) FROM session_text")).scalar()
            indexed = time.perf_counter() - started
            if ws.backend == "postgresql":
                with rt.db.engine.connect() as conn:
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                    conn.execute(text("VACUUM ANALYZE session_text"))
                    conn.execute(text("VACUUM ANALYZE session_index"))
            print(
                f"   data: {args.sessions} files ({size / 1e6:.0f} MB) written in {written:.0f} s;"
                f" reconcile_user indexed {report.reread} sessions and {docs} texts in"
                f" {indexed:.0f} s"
            )

            client = app.test_client()
            headers = {"Authorization": f"Bearer {token}"}

            def first_page() -> list[str]:
                rows, _ = session_service.list_sessions(rt, principal, limit=PAGE)
                return [r.id for r in rows]

            def searcher(word: str) -> Callable[[], list[str]]:
                def run() -> list[str]:
                    found, _ = session_service.search_sessions(rt, principal, word, limit=PAGE)
                    return [f.row.id for f in found]

                return run

            def http(url: str) -> Callable[[], list[str]]:
                def run() -> list[str]:
                    response = client.get(url, headers=headers)
                    if response.status_code != 200:
                        raise SystemExit(f"GET {url} answered {response.status_code}")
                    return [item["id"] for item in response.get_json()["items"]]

                return run

            rare, common = searcher(RARE), searcher(COMMON)
            # Agreement before timing: search finds what the scan finds (the rare word:
            # every match; the common one: only matches, and a full page of them).
            scan_rare = like_search(rt, user_id, RARE, "scan")
            scan_common = like_search(rt, user_id, COMMON, "scan")
            if sorted(rare()) != sorted(scan_rare) or not set(common()) <= set(scan_common):
                print("FAIL: search and the LIKE scan disagree")
                return 1
            if len(common()) != PAGE or first_page() != http(f"/api/v1/sessions?limit={PAGE}")():
                print("FAIL: a page is not what it should be")
                return 1
            print(
                f"   matches: '{RARE}' in {len(scan_rare)} sessions, "
                f"'{COMMON}' in {len(scan_common)} of {args.sessions}"
            )

            paths = {
                "list_sessions, first page (index)": first_page,
                "GET /api/v1/sessions (test client)": http(f"/api/v1/sessions?limit={PAGE}"),
                f"search_sessions '{RARE}' (rare)": rare,
                f"search_sessions '{COMMON}' (common)": common,
                f"GET /api/v1/sessions?q={RARE}": http(f"/api/v1/sessions?q={RARE}"),
                f"GET /api/v1/sessions?q={COMMON}": http(f"/api/v1/sessions?q={COMMON}"),
            }
            for fn in paths.values():
                timed(fn, 10)  # warm-up
            samples: dict[str, list[int]] = {name: [] for name in paths}
            for i in range(args.runs):  # interleaved, order alternating
                order = list(paths.items())
                for name, fn in order if i % 2 == 0 else order[::-1]:
                    samples[name] += timed(fn, 1)
            scans = {
                f"LIKE {way} '{word}'" + ("" if way == "scan" else "*"): (
                    lambda word=word, way=way: like_search(rt, user_id, word, way)
                )
                for way in LIKE_WAYS
                for word in (RARE, COMMON)
            }
            for name, fn in scans.items():
                timed(fn, 1)
                samples[name] = timed(fn, args.baseline_runs)
        finally:
            rt.close()

    print()
    print_table(
        ["path (limit 50)", "runs", "p50 ms", "p99 ms", "max ms"],
        [row(name, values) for name, values in samples.items()],
    )
    print(
        "   * no target: 'per session' stops at each session's first matching text; "
        "'first 50' also stops after 50 sessions (unranked)"
    )
    p50 = {name: median(values) for name, values in samples.items()}
    page_ms = p50["list_sessions, first page (index)"] / NS_PER_MS
    checks = [(f"first page p50 < {TARGET_PAGE_MS:g} ms ({page_ms:.3f})", page_ms < TARGET_PAGE_MS)]
    for word, kind in ((RARE, "rare"), (COMMON, "common")):
        search_ns = p50[f"search_sessions '{word}' ({kind})"]
        speedup = p50[f"LIKE scan '{word}'"] / search_ns
        print(f"   {kind} word: search {speedup:,.0f}x faster than the LIKE scan (p50/p50)")
        checks.append(
            (
                f"search p50 < {TARGET_SEARCH_MS:g} ms, {kind} ({search_ns / NS_PER_MS:.3f})",
                search_ns / NS_PER_MS < TARGET_SEARCH_MS,
            )
        )
        checks.append(
            (f">= {TARGET_SPEEDUP:g}x the LIKE scan, {kind} ({speedup:,.0f}x)", speedup >= 20)
        )
    return verdict(checks)


if __name__ == "__main__":
    sys.exit(main())
