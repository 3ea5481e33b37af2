"""The sidebar at scale: first page and full-text search against a LIKE scan over the text.

    .venv/bin/python bench/bench_search.py [--sessions 10000] [--messages 40] [--database-url URL]
        [--users 1] [--peer hermes]

One user with 10,000 sessions of 40 messages (200-800 characters each, a tool call and its
result every 40 turns; times spread over 60 days), written through the real store and indexed
with sync.reconcile_user (rows and search text). A rare word is planted in one message of
each of 5 sessions; the common word is one of the generator's vocabulary, found in every
session. Beside them (issue 42), a word per frequency of FREQUENCIES (0.01%, 1%, 2.5%, 25%
and 90% of the messages with text), planted as itself or its plural, and searched as typed
with word forms matching (a prefix, Eonyx's default; `word*` for Hermes, its prefix syntax):
p50 and p95 of each, in-process, with targets of p95 under 2x its p50 and (with the peer)
Eonyx's p50 at or below Hermes's at every frequency.

`--users N` spreads the sessions over N accounts, as a team's server holds them (issue 42:
100 users x 1,000 sessions on PostgreSQL); each user's sessions are generated alike (the
rare word in PLANTED of them, the words of FREQUENCIES in their shares), one user after the
other, and every timed call is the first user's. Not with --peer.

`--peer hermes`: the same sessions (ids, titles, messages, times) are also imported into Hermes
Agent's session store (PyPI hermes-agent, hermes_state.SessionDB: SQLite with FTS5) through its
own import API, and its first page (list_sessions_rich, as its dashboard lists) and its FTS5
search (search_messages) are timed interleaved with Eonyx's, in one table with the ratio
Eonyx/Hermes. Hermes is imported from wherever it is importable, else from --peer-path: install
it there with `pip install --no-deps --target .bench-peers/hermes hermes-agent==0.19.0`, not into
the virtualenv, whose `cli` module it would shadow with its own top-level cli.py.

Targets: the first page (limit 50) through session_service.list_sessions has p50 < 10 ms;
session_service.search_sessions (limit 50: ranking, filters, snippets) has p50 < 50 ms for
the rare and for the common word, and is at least 20x faster (p50 against p50) than a `LIKE
'%word%'` scan over the message text that finds the matching sessions and orders them as the
list does (case-sensitive on PostgreSQL: ILIKE would be several times slower there, so the
baseline gets its best chance; SQLite's LIKE ignores ASCII case). On PostgreSQL the tables
are vacuumed and analysed after the bulk load, as autovacuum would do (until then the GIN
index's pending list is scanned by every search). With --peer hermes (issue 24): Eonyx in-
process at or below Hermes for all three; over HTTP, the common word's p95 under 100 ms, and
a list call within 1.5x of the bare Flask app below (the issue asked for 2x its in-process
cost, which that floor itself exceeds here). Also shown: the same through HTTP (Flask's test
client in this process, with Redis as `eonyx serve` has it by default, rate limits on; the
bench reads each answer with orjson, as a client that cares about speed would); a bare Flask
app that makes the same in-process call and dumps it with the same schema and JSON, but has
no token check, rate limit, argument parsing or request hooks (the floor of a list over
HTTP); a LIKE query that reads each session's texts until the first match, and one that also
stops after 50 sessions in list order (unranked; quick when the word is common, a full scan
when it is rare).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
from _common import (
    NS_PER_MS,
    ROOT,
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
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import text

from api.app import create_app
from api.context import runtime_of
from api.extensions import FastJSONProvider
from api.sessions.schemas import SessionPageSchema
from shared.core.clock import isoformat, parse_time
from shared.core.settings import load_settings
from shared.index import sync
from shared.infra.embedded_redis import EmbeddedRedis
from shared.sessions import service as session_service
from workers.queue import celery_jobs

PAGE = 50
RARE, COMMON = "zanzibar", "cache"
PLANTED = 5  # sessions with the rare word, in one message each
TARGET_PAGE_MS, TARGET_SEARCH_MS, TARGET_SPEEDUP = 10.0, 50.0, 20.0
# Over HTTP (issue 24): the common word's p95, and a list call against its in-process cost
# (asked for) and against the same call in a bare Flask app (the aim where the floor itself
# is over that).
TARGET_HTTP_COMMON_P95_MS, TARGET_HTTP_LIST_RATIO, TARGET_HTTP_LIST_FLOOR = 100.0, 2.0, 1.5
TARGET_SPREAD = 2.0  # a frequency word's p95 under this times its p50 (issue 42)
# (word, share of the messages with text that have it): none is a prefix of another word in
# the corpus, so each finds exactly its own plantings.
FREQUENCIES = (
    ("quokka", 0.0001),
    ("marmot", 0.01),
    ("pelican", 0.025),
    ("walrus", 0.25),
    ("otter", 0.90),
)
HERMES_BATCH = 250  # sessions per import_sessions call (its limits: 500, 50,000 messages, 25 MB)


def corpus(
    sessions: int, messages: int, counts: dict[str, int], seed: int = 11
) -> Iterator[list[dict[str, Any]]]:
    """Each session's message records, the rare word planted in PLANTED of them and each word
    of FREQUENCIES in its share of the messages (`counts`: how many got it)."""
    rng = random.Random(seed)
    planted = set(rng.sample(range(sessions), min(PLANTED, sessions)))
    for n in range(sessions):
        history = make_history(rng, messages)
        for record in history:
            if record.get("content"):
                plant_frequencies(rng, record, counts)
        shift = timedelta(seconds=rng.uniform(0, 60 * 86400))
        for record in history:
            record["created_at"] = isoformat(parse_time(record["created_at"]) - shift)
        if n in planted:
            texts = [record for record in history if record.get("content")]
            record = rng.choice(texts)
            words = record["content"].split(" ")
            words.insert(rng.randrange(len(words)), RARE)
            record["content"] = " ".join(words)
        yield history


def plant_frequencies(rng: random.Random, record: dict[str, Any], counts: dict[str, int]) -> None:
    """Each word of FREQUENCIES into the message with its probability, as itself or its
    plural, at a random place."""
    words = record["content"].split(" ")
    for word, share in FREQUENCIES:
        if rng.random() < share:
            words.insert(rng.randrange(len(words) + 1), word + rng.choice(("", "s")))
            counts[word] = counts.get(word, 0) + 1
    record["content"] = " ".join(words)


def write_sessions(
    rt,
    user_id: str,
    sessions: int,
    messages: int,
    counts: dict[str, int],
    peer: HermesPeer | None = None,
    seed: int = 11,
) -> int:
    """Each session in one durable write (header + messages), and into the peer's store when
    there is one; returns the bytes on disk of Eonyx's files."""
    for n, history in enumerate(corpus(sessions, messages, counts, seed)):
        title = f"Chat {n}"
        state, _ = rt.store.create(user_id, source="web", title=title, records=history)
        if peer is not None:
            peer.add(state.id, title, state.created_at.timestamp(), history)
    if peer is not None:
        peer.finish()
    directory = rt.store.sessions_dir(user_id)
    return sum(path.stat().st_size for path in directory.iterdir())


class HermesPeer:
    """Hermes Agent's session store (hermes_state.SessionDB) in `directory`, fed the same
    sessions through its own import API (`import_sessions`, what its dashboard's import
    calls: one transaction per batch, its FTS5 triggers index every message)."""

    def __init__(self, directory: Path, peer_path: Path) -> None:
        os.environ["HERMES_HOME"] = str(directory)  # nothing of ~/.hermes is read or written
        try:
            import hermes_state
        except ImportError:
            # Appended, not prepended: the project's own `cli` package must stay first.
            sys.path.append(str(peer_path))
            try:
                import hermes_state
            except ImportError:
                raise SystemExit(
                    f"hermes-agent is not importable (looked in {peer_path} too); install it "
                    f"with: .venv/bin/pip install --no-deps --target {peer_path} "
                    "hermes-agent==0.19.0"
                ) from None
        self.module = hermes_state
        self.db = hermes_state.SessionDB(db_path=directory / "state.db")
        self.pending: list[dict[str, Any]] = []
        self.version = _version("hermes-agent")

    def add(
        self, session_id: str, title: str, started: float, history: list[dict[str, Any]]
    ) -> None:
        """A session as Hermes holds one: started when Eonyx's was created (both list the
        newest first: Eonyx by last update, here the creation, as the messages are older)."""
        converted = []
        for record in history:
            message: dict[str, Any] = {
                "role": record["role"],
                "content": record.get("content"),
                "timestamp": parse_time(record["created_at"]).timestamp(),
            }
            if record.get("tool_calls"):
                message["tool_calls"] = record["tool_calls"]
            if record["role"] == "tool":
                message["tool_call_id"] = record.get("tool_call_id")
                message["tool_name"] = record.get("name")
            converted.append(message)
        self.pending.append(
            {
                "id": session_id,
                "source": "cli",
                "title": title,
                "started_at": started,
                "messages": converted,
            }
        )
        if len(self.pending) >= HERMES_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            result = self.db.import_sessions(self.pending)
            if not result.get("ok") or result.get("imported") != len(self.pending):
                raise SystemExit(f"Hermes refused the import: {result.get('errors')}")
            self.pending = []

    def finish(self) -> None:
        """The last batch, then its FTS5 segments merged as its write path does every 1,000
        writes (`optimize_fts`): a store written message by message is kept merged."""
        self.flush()
        self.db.optimize_fts()

    def first_page(self) -> list[str]:
        """Its dashboard's list call (GET /api/sessions: compact rows, by start time)."""
        return [row["id"] for row in self.db.list_sessions_rich(limit=PAGE, compact_rows=True)]

    def searcher(self, word: str) -> Callable[[], list[str]]:
        """Its FTS5 message search, bm25-ranked, a page of PAGE messages with their snippets
        and neighbours; the sessions, in the order first found."""

        def run() -> list[str]:
            found = self.db.search_messages(word, limit=PAGE)
            return list(dict.fromkeys(match["session_id"] for match in found))

        return run

    def close(self) -> None:
        self.db.close()


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


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
        ms(percentile(samples, 95)),
        ms(percentile(samples, 99)),
        ms(max(samples)),
    ]


# The three operations compared with the peer: (label, Eonyx in-process, Hermes, Eonyx HTTP).
LIST, SEARCH_RARE, SEARCH_COMMON = "first page", f"search '{RARE}'", f"search '{COMMON}'"
PATH_LIST = "list_sessions, first page (index)"
PATH_LIST_HTTP = "GET /api/v1/sessions (test client)"
PATH_LIST_FLOOR = "GET /sessions, bare Flask (test client)"


def path_search(word: str, kind: str) -> str:
    return f"search_sessions '{word}' ({kind})"


def path_search_http(word: str) -> str:
    return f"GET /api/v1/sessions?q={word}"


def path_hermes(operation: str) -> str:
    return f"Hermes {operation}"


def path_frequency(word: str, share: float) -> str:
    return f"search_sessions '{word}' ({share:.2%} of messages)"


def path_frequency_hermes(word: str, share: float) -> str:
    return f"Hermes '{word}*' ({share:.2%})"


COMPARED = [
    (LIST, PATH_LIST, PATH_LIST_HTTP),
    (SEARCH_RARE, path_search(RARE, "rare"), path_search_http(RARE)),
    (SEARCH_COMMON, path_search(COMMON, "common"), path_search_http(COMMON)),
]


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument(
        "--users", type=int, default=1, help="spread the sessions over N users (the first timed)"
    )
    parser.add_argument("--runs", type=int, default=50, help="timed runs (index paths)")
    parser.add_argument("--baseline-runs", type=int, default=5, help="timed LIKE scans")
    parser.add_argument(
        "--peer", choices=["hermes"], help="also seed and time Hermes Agent's session store"
    )
    parser.add_argument(
        "--peer-path",
        type=Path,
        default=ROOT / ".bench-peers" / "hermes",
        help="where hermes-agent was installed with pip --target (default: %(default)s)",
    )
    args = parser.parse_args()
    if args.users > 1 and args.peer:
        parser.error("--users and --peer exclude each other")
    per_user = args.sessions // args.users

    with workspace(args.database_url, keep=args.keep) as ws:
        # Redis as `eonyx serve` has it by default (its embedded one): tokens are checked from
        # the process's cache, and the rate limits are counted there, as in production.
        embedded = EmbeddedRedis(ws.data_dir)
        env = {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        settings = load_settings(env | {"REDIS_URL": embedded.start()})
        app = create_app(settings, jobs_queue=celery_jobs(settings))
        rt = runtime_of(app)
        peer: HermesPeer | None = None
        try:
            principal, token = bench_account(rt)
            user_id = principal.user_id
            users = [user_id] + [bench_account(rt)[0].user_id for _ in range(args.users - 1)]
            print_header(
                "bench_search",
                ws,
                f"{per_user * args.users} sessions x {args.messages} messages"
                + (f", {args.users} users of {per_user}" if args.users > 1 else ""),
            )
            if args.peer == "hermes":
                peer = HermesPeer(ws.root / "hermes", args.peer_path)
                print(f"   peer: Hermes Agent {peer.version} ({peer.module.__file__})")
            started = time.perf_counter()
            counts: dict[str, int] = {}  # the timed user's
            size = write_sessions(rt, user_id, per_user, args.messages, counts, peer)
            for n, other in enumerate(users[1:], start=1):
                size += write_sessions(rt, other, per_user, args.messages, {}, seed=11 + n)
            written = time.perf_counter() - started
            started = time.perf_counter()
            reread = 0
            for each in users:
                with rt.db.session() as db:
                    reread += sync.reconcile_user(db, rt.store, each).reread
            with rt.db.session() as db:
                docs = db.execute(text("SELECT count(*) FROM session_text")).scalar()
            indexed = time.perf_counter() - started
            if ws.backend == "postgresql":
                with rt.db.engine.connect() as conn:
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                    conn.execute(text("VACUUM ANALYZE session_text"))
                    conn.execute(text("VACUUM ANALYZE session_index"))
            print(
                f"   data: {per_user * args.users} files ({size / 1e6:.0f} MB) written"
                f"{' (and imported into Hermes)' if peer else ''} in {written:.0f} s;"
                f" reconcile_user indexed {reread} sessions and {docs} texts in"
                f" {indexed:.0f} s"
            )

            client = app.test_client()
            headers = {"Authorization": f"Bearer {token}"}

            def first_page_rows() -> dict[str, Any]:
                rows, next_cursor = session_service.list_sessions(rt, principal, limit=PAGE)
                return {"items": rows, "next_cursor": next_cursor}

            def first_page() -> list[str]:
                return [r.id for r in first_page_rows()["items"]]

            def searcher(word: str) -> Callable[[], list[str]]:
                def run() -> list[str]:
                    found, _ = session_service.search_sessions(rt, principal, word, limit=PAGE)
                    return [f.row.id for f in found]

                return run

            def http(url: str, on: FlaskClient = client) -> Callable[[], list[str]]:
                def run() -> list[str]:
                    response = on.get(url, headers=headers)
                    if response.status_code != 200:
                        raise SystemExit(f"GET {url} answered {response.status_code}")
                    return [item["id"] for item in orjson.loads(response.data)["items"]]

                return run

            rare, common = searcher(RARE), searcher(COMMON)
            # Agreement before timing: search finds what the scan finds (the rare word:
            # every match; the common one: only matches, and a full page of them).
            scan_rare = like_search(rt, user_id, RARE, "scan")
            scan_common = like_search(rt, user_id, COMMON, "scan")
            if sorted(rare()) != sorted(scan_rare) or not set(common()) <= set(scan_common):
                print("FAIL: search and the LIKE scan disagree")
                return 1
            floor = http("/sessions", floor_app(first_page_rows).test_client())
            if (
                len(common()) != PAGE
                or not first_page() == floor() == http(f"/api/v1/sessions?limit={PAGE}")()
            ):
                print("FAIL: a page is not what it should be")
                return 1
            print(
                f"   matches: '{RARE}' in {len(scan_rare)} sessions, "
                f"'{COMMON}' in {len(scan_common)} of {per_user}"
            )

            paths = {
                PATH_LIST: first_page,
                PATH_LIST_HTTP: http(f"/api/v1/sessions?limit={PAGE}"),
                PATH_LIST_FLOOR: floor,
                path_search(RARE, "rare"): rare,
                path_search(COMMON, "common"): common,
                path_search_http(RARE): http(f"/api/v1/sessions?q={RARE}"),
                path_search_http(COMMON): http(f"/api/v1/sessions?q={COMMON}"),
            }
            if peer is not None:
                if not agrees_with_peer(peer, first_page, rare, common, min(PLANTED, per_user)):
                    return 1
                paths[path_hermes(LIST)] = peer.first_page
                paths[path_hermes(SEARCH_RARE)] = peer.searcher(RARE)
                paths[path_hermes(SEARCH_COMMON)] = peer.searcher(COMMON)
            for word, share in FREQUENCIES:
                paths[path_frequency(word, share)] = searcher(word)
                if peer is not None:
                    paths[path_frequency_hermes(word, share)] = peer.searcher(f"{word}*")
            print(
                "   planted: "
                + ", ".join(f"'{w}' in {counts.get(w, 0)} messages" for w, _ in FREQUENCIES)
            )
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
            if peer is not None:
                peer.close()
            rt.close()
            embedded.stop()

    print()
    print_table(
        ["path (limit 50)", "runs", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        [row(name, values) for name, values in samples.items()],
    )
    print(
        "   * no target: 'per session' stops at each session's first matching text; "
        "'first 50' also stops after 50 sessions (unranked)"
    )
    p50 = {name: median(values) for name, values in samples.items()}
    page_ms = p50[PATH_LIST] / NS_PER_MS
    checks = [(f"first page p50 < {TARGET_PAGE_MS:g} ms ({page_ms:.3f})", page_ms < TARGET_PAGE_MS)]
    for word, kind in ((RARE, "rare"), (COMMON, "common")):
        search_ns = p50[path_search(word, kind)]
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
    if peer is not None:
        checks += peer_table(samples, peer.version)
    checks += frequency_table(samples, peer is not None)
    return verdict(checks)


def frequency_table(samples: dict[str, list[int]], with_peer: bool) -> list[tuple[str, bool]]:
    """Each frequency's p50 and p95, Eonyx's (and Hermes's), and the targets of issue 42."""
    rows, checks = [], []
    for word, share in FREQUENCIES:
        ours = samples[path_frequency(word, share)]
        p50, p95 = median(ours), percentile(ours, 95)
        line = [f"{share:.2%} '{word}'", ms(p50), ms(p95), f"{p95 / p50:.2f}"]
        checks.append(
            (f"p95 < {TARGET_SPREAD:g}x p50 at {share:.2%} ({p95 / p50:.2f}x)", p95 < 2 * p50)
        )
        if with_peer:
            theirs = samples[path_frequency_hermes(word, share)]
            hermes = median(theirs)
            line += [ms(hermes), ms(percentile(theirs, 95)), f"{p50 / hermes:.2f}"]
            checks.append(
                (
                    f"Eonyx p50 <= Hermes at {share:.2%} ({ms(p50)} vs {ms(hermes)} ms)",
                    p50 <= hermes,
                )
            )
        rows.append(line)
    print()
    headers = ["word frequency, in-process", "Eonyx p50", "p95", "p95/p50"]
    if with_peer:
        headers += ["Hermes p50", "p95", "Eonyx/Hermes"]
    print_table(headers, rows)
    return checks


def floor_app(page: Callable[[], dict[str, Any]]) -> Flask:
    """The floor of a list call over HTTP: the same in-process call and the same response
    schema and JSON, in a bare Flask app (no token check, rate limit, argument parsing or
    request hooks), through the same test client."""
    app = Flask("floor")
    app.json = FastJSONProvider(app)
    schema = SessionPageSchema()

    @app.get("/sessions")
    def listed() -> dict[str, Any]:
        return schema.dump(page())

    return app


def agrees_with_peer(
    peer: HermesPeer,
    first_page: Callable[[], list[str]],
    rare: Callable[[], list[str]],
    common: Callable[[], list[str]],
    planted: int,
) -> bool:
    """Both stores answer alike before either is timed: the same sessions for the rare word,
    a page for the common one; the same first page (Hermes lists by start time, Eonyx by last
    update: the same moment here)."""
    ours, theirs = rare(), peer.searcher(RARE)()
    if sorted(ours) != sorted(theirs) or len(ours) != planted:
        print(f"FAIL: the rare word's sessions: Eonyx {sorted(ours)}, Hermes {sorted(theirs)}")
        return False
    if not common() or not peer.searcher(COMMON)():
        print("FAIL: a search for the common word found nothing")
        return False
    if first_page() != peer.first_page():
        print("FAIL: the first pages differ")
        return False
    print(f"   Hermes agrees: the same first page, '{RARE}' in the same {len(ours)} sessions")
    return True


def peer_table(samples: dict[str, list[int]], version: str) -> list[tuple[str, bool]]:
    """Eonyx beside Hermes, p50 (ms), and the targets of issue 24."""
    rows, checks = [], []
    for operation, ours, http_path in COMPARED:
        eonyx, hermes = median(samples[ours]), median(samples[path_hermes(operation)])
        over_http = samples[http_path]
        rows.append(
            [
                operation,
                ms(eonyx),
                ms(hermes),
                f"{eonyx / hermes:.2f}",
                ms(median(over_http)),
                ms(percentile(over_http, 95)),
            ]
        )
        checks.append(
            (
                f"Eonyx in-process <= Hermes, {operation} ({ms(eonyx)} vs {ms(hermes)} ms)",
                eonyx <= hermes,
            )
        )
    print()
    print_table(
        [
            f"p50 of {len(samples[PATH_LIST])}, ms",
            "Eonyx in-process",
            f"Hermes {version}",
            "Eonyx/Hermes",
            "Eonyx HTTP",
            "HTTP p95",
        ],
        rows,
    )
    print(
        "   Hermes: SessionDB.list_sessions_rich(limit=50, compact_rows=True) and "
        "SessionDB.search_messages(word, limit=50) (50 messages, bm25, snippets, neighbours)"
    )
    http_common = percentile(samples[path_search_http(COMMON)], 95) / NS_PER_MS
    checks.append(
        (
            f"HTTP common-word search p95 < {TARGET_HTTP_COMMON_P95_MS:g} ms ({http_common:.3f})",
            http_common < TARGET_HTTP_COMMON_P95_MS,
        )
    )
    in_process, floor = median(samples[PATH_LIST]), median(samples[PATH_LIST_FLOOR])
    over_http = median(samples[PATH_LIST_HTTP])
    print(
        f"   list over HTTP: Eonyx {over_http / in_process:.2f}x its in-process cost; a bare "
        f"Flask app with the same call, schema and JSON {floor / in_process:.2f}x (the issue "
        f"asked for {TARGET_HTTP_LIST_RATIO:g}x: out of reach where the floor itself is over it)"
    )
    checks.append(
        (
            f"HTTP list within {TARGET_HTTP_LIST_FLOOR:g}x of the bare Flask floor "
            f"({over_http / floor:.2f}x)",
            over_http <= TARGET_HTTP_LIST_FLOOR * floor,
        )
    )
    return checks


if __name__ == "__main__":
    sys.exit(main())
