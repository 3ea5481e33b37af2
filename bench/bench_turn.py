"""Server-side overhead of one chat turn with a model that answers at once, over real HTTP.

    .venv/bin/python bench/bench_turn.py [--turns 300] [--database-url URL] [--redis-url URL]

The app (api.create_app) is served on 127.0.0.1 from threads of this process; the model is the
fake OpenAI-compatible server of tests/fake_llm.py (werkzeug, also a thread here), which echoes
the user's message at once. One httpx.Client sends, interleaved and in rotating order, per
round:

- GET /bench/bare: a bare Flask view (`{"ok": true}`) added to the same app by this script;
- GET /bench/auth: the same view behind the API's token check (one small transaction);
- POST /api/v1/sessions/<id>/turns {"content": ...} on a small session (a fresh session every
  --turns-per-session turns, so it holds 0-20 messages);
- the same turn on a session that already holds 200 messages (~500 characters each, a few
  tool calls; also replaced every --turns-per-session turns, so 200-220 messages);
- after each kind of turn, the model call alone: the body that turn sent to the model, POSTed
  by the same client straight to the fake (client encode, loopback, the fake's work, decode).

The app is served by werkzeug's `make_server(..., threaded=True)`: a new handler thread for
every connection. With --pooled the requests above also go, interleaved, to the same werkzeug
server class with a pool of 4 reused handler threads (like gunicorn's gthread workers in
deploy/). werkzeug closes the connection after every response, so every request (to the app,
and the app's own call to the model) pays a TCP connect; the bare endpoint and the model call
pay the same.

overhead = turn_total - model_call, per round (paired samples), then p50 and p99.
Targets, for each session size, on the make_server(threaded=True) server: overhead p50 < 5 ms,
and overhead p50 <= 4x the bare endpoint's p50 (client-measured, same server, same run); with
--pooled, the pooled server's figures are printed beside them (no target). In-process figures
show where the time goes: the app's own WSGI time, the fake's own WSGI time, and the turn's
steps (timed by wrapping the functions iter_turn calls, in this process only). The model has a
128,000-token window, so the estimate runs and nothing is compacted (checked: one model call
per turn). The turn lock is FileLocks, or RedisLocks with --redis-url. The database is SQLite
in the temporary directory, or --database-url (a private schema). `--profile` runs 100 extra
small-session turns under cProfile afterwards and prints the top functions of the app's
request threads.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import random
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
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
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from api import create_app
from api.context import login_required, runtime_of
from shared.core.settings import load_settings
from shared.sessions import service as session_service
from workers.queue import celery_jobs

sys.path.insert(0, str(ROOT))  # tests/ is not installed; _common put the repo root first
from tests.fake_llm import FakeLLM  # noqa: E402

TARGET_OVERHEAD_MS = 5.0
TARGET_BARE_RATIO = 4.0
WINDOW = 128_000
LONG_MESSAGES = 200
POOL_THREADS = 4
PROFILE_TURNS = 100
CONTENT = "What did we decide about the cache?"
SERVERS = {
    "new": "make_server(threaded=True): a new thread per connection",
    "pool": f"same server class, {POOL_THREADS} reused handler threads",
}
SIZES = {"small": "small session (0-20 msgs)", "long": f"{LONG_MESSAGES}-msg session"}


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class PooledWSGIServer(BaseWSGIServer):
    """werkzeug's server with a fixed pool of handler threads that are reused."""

    multithread = True

    def __init__(self, host: str, port: int, app: Any, threads: int) -> None:
        super().__init__(host, port, app, handler=QuietHandler)
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="bench-pool")

    def process_request(self, request: Any, client_address: Any) -> None:
        self.pool.submit(self._handle, request, client_address)

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        self.pool.shutdown(wait=True)
        super().server_close()


class Recorder:
    """Times (ns) of work done in other threads, filed under the label the driver set."""

    def __init__(self) -> None:
        self.label = ""
        self.samples: dict[str, list[int]] = defaultdict(list)
        self.recording = False

    def add(self, kind: str, elapsed: int) -> None:
        if self.recording:
            self.samples[f"{kind}:{self.label}"].append(elapsed)

    def wsgi(self, kind: str, app: Callable[..., Iterable[bytes]]) -> Callable[..., Any]:
        def timed(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            t0 = time.perf_counter_ns()
            try:
                return app(environ, start_response)
            finally:
                self.add(kind, time.perf_counter_ns() - t0)

        return timed

    def call(self, kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(kind, time.perf_counter_ns() - t0)

        return timed


class TimedHold:
    """A turn-lock context manager whose enter and exit are timed."""

    def __init__(self, rec: Recorder, inner: Any) -> None:
        self.rec, self.inner = rec, inner

    def __enter__(self) -> Any:
        t0 = time.perf_counter_ns()
        try:
            return self.inner.__enter__()
        finally:
            self.rec.add("lock_acquire", time.perf_counter_ns() - t0)

    def __exit__(self, *exc_info: Any) -> Any:
        t0 = time.perf_counter_ns()
        try:
            return self.inner.__exit__(*exc_info)
        finally:
            self.rec.add("lock_release", time.perf_counter_ns() - t0)


# (kind, title) of the timed steps of a turn, in the order they run; see instrument().
STEPS = [
    ("auth", "authenticate (token check, own transaction)"),
    ("run_turn", "run_turn"),
    ("get_session", "  get_session (ownership check, own transaction)"),
    ("resolve", "  catalog.resolve (query; its transaction is in 'rest')"),
    ("lock_acquire", "  turn lock acquire"),
    ("load", "  SessionStore.load"),
    ("append_1", "  append_records, user message (transaction + file)"),
    ("store_append_1", "    of which SessionStore.append (write + fsync)"),
    ("assemble", "  assemble_context (summarize=True)"),
    ("llm", "  LLMClient.complete (model call, from inside)"),
    ("append_2", "  append_records, answer"),
    ("store_append_2", "    of which SessionStore.append"),
    ("lock_release", "  turn lock release"),
    ("extraction", "  memory extraction hint (after the lock)"),
]


def instrument(rec: Recorder, rt: Any) -> None:
    """Time the steps of a turn in-process by wrapping what iter_turn calls (module attributes
    and the runtime's objects). A step the current code does not have is simply not shown."""
    import api.context
    import shared.chat.turns
    import shared.llm.catalog
    import shared.sessions.service

    try:
        import shared.memory.extraction as extraction
    except ImportError:
        extraction = None
    auth_name = "authenticate" if hasattr(api.context, "authenticate") else "_authenticate"
    targets = [
        (api.context, auth_name, "auth"),
        (shared.chat.turns, "run_turn", "run_turn"),
        (shared.sessions.service, "get_session", "get_session"),
        (shared.llm.catalog, "resolve", "resolve"),
        (rt.store, "load", "load"),
        (shared.sessions.service, "append_records", "append"),
        (rt.store, "append", "store_append"),
        (shared.chat.turns, "assemble_context", "assemble"),
        (rt.llm, "complete", "llm"),
        (extraction, "maybe_enqueue_extraction", "extraction"),
    ]
    for owner, attr, kind in targets:
        if owner is not None and callable(getattr(owner, attr, None)):
            setattr(owner, attr, rec.call(kind, getattr(owner, attr)))
    hold = rt.locks.hold
    rt.locks.hold = lambda name, **kw: TimedHold(rec, hold(name, **kw))


def breakdown(s: dict[str, list[int]], label: str) -> dict[str, list[int]]:
    """Per-turn samples of each step of one kind of turn, with the remainders computed."""
    out = {kind: list(s.get(f"{kind}:{label}", [])) for kind, _ in STEPS}
    for kind in ("append", "store_append"):
        both = s.get(f"{kind}:{label}", [])
        out[f"{kind}_1"], out[f"{kind}_2"] = both[0::2], both[1::2]
    out["app"] = s[f"app:{label}"]
    n = len(out["app"])
    inner = [k for k, _ in STEPS[2:] if not k.startswith("store_") and out[k]]
    if all(len(out[k]) == n for k in ["auth", "run_turn", *inner]):
        out["rest_run_turn"] = [
            out["run_turn"][i] - sum(out[k][i] for k in inner) for i in range(n)
        ]
        out["rest_app"] = [
            s[f"app:{label}"][i] - out["auth"][i] - out["run_turn"][i] for i in range(n)
        ]
    return out


class Rotation:
    """Sessions of one kind, a new one every `every` turns (all created before timing)."""

    def __init__(self, ids: list[str], every: int) -> None:
        self.ids, self.every, self.turns = ids, every, 0

    def next(self) -> str:
        session_id = self.ids[self.turns // self.every]
        self.turns += 1
        return session_id


def start(server: BaseWSGIServer) -> threading.Thread:
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return thread


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="timed turns per session size")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument("--redis-url", default=None, help="turn lock on Redis (RedisLocks)")
    parser.add_argument("--profile", action="store_true", help="cProfile extra turns")
    parser.add_argument(
        "--pooled", action="store_true", help="also serve from reused threads (no target)"
    )
    args = parser.parse_args()
    rounds = args.warmup + args.turns
    every = args.turns_per_session
    sessions_needed = -(-(rounds + 1) // every)  # +1: an untimed first turn
    if args.profile:
        sessions_needed += -(-PROFILE_TURNS // every) + 1

    fake = FakeLLM().start()
    try:
        with workspace(args.database_url, keep=args.keep) as ws:
            env = {
                "DATA_DIR": str(ws.data_dir),
                "DATABASE_URL": ws.database_url,
                "HOME": str(ws.root),
                "EONYX_LLM_BASE_URL": fake.base_url,
                "EONYX_LLM_MODEL": "fake-model",
                "EONYX_LLM_CONTEXT_WINDOW": str(WINDOW),
                "LLM_MAX_RETRIES": "0",
            }
            if args.redis_url:
                env["REDIS_URL"] = args.redis_url
            settings = load_settings(env)
            app = create_app(settings, jobs_queue=celery_jobs(settings))
            rt = runtime_of(app)
            rec = Recorder()
            app.add_url_rule("/bench/bare", "bench_bare", view_func=lambda: {"ok": True})
            app.add_url_rule(
                "/bench/auth", "bench_auth", view_func=login_required(lambda: {"ok": True})
            )
            app.wsgi_app = rec.wsgi("app", app.wsgi_app)  # type: ignore[method-assign]
            fake._server.app = rec.wsgi("fake", fake._server.app)
            instrument(rec, rt)
            servers: dict[str, BaseWSGIServer] = {
                "new": make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
            }
            if args.pooled:
                servers["pool"] = PooledWSGIServer("127.0.0.1", 0, app, POOL_THREADS)
            threads = [start(server) for server in servers.values()]
            ports = {name: server.server_port for name, server in servers.items()}
            client = httpx.Client(timeout=30)
            try:
                print_header(
                    "bench_turn",
                    ws,
                    f"{args.turns} turns per session size, turn lock: {type(rt.locks).__name__}",
                )
                principal, token = bench_account(rt)
                client.headers["Authorization"] = f"Bearer {token}"

                started = time.perf_counter()
                rng = random.Random(5)
                rotations: dict[tuple[str, str], Rotation] = {}
                for srv in servers:
                    small_ids, long_ids = [], []
                    for _ in range(sessions_needed):
                        small_ids.append(session_service.create_session(rt, principal).id)
                        row = session_service.create_session(rt, principal, title="long")
                        history = make_history(rng, LONG_MESSAGES)
                        session_service.append_records(rt, principal, row.id, history)
                        long_ids.append(row.id)
                    rotations["small", srv] = Rotation(small_ids, every)
                    rotations["long", srv] = Rotation(long_ids, every)
                print(
                    f"   setup: {2 * len(servers) * sessions_needed} sessions ({LONG_MESSAGES} "
                    f"messages in half of them) in {time.perf_counter() - started:.1f} s; "
                    f"app on port(s) {', '.join(f'{p} ({n})' for n, p in ports.items())}, "
                    f"fake model at {fake.base_url}"
                )
                bodies: dict[str, Any] = {}

                def get(srv: str, path: str) -> None:
                    response = client.get(f"http://127.0.0.1:{ports[srv]}{path}")
                    if response.status_code != 200:
                        raise SystemExit(f"GET {path} answered {response.status_code}")

                def turn(srv: str, size: str) -> None:
                    session_id = rotations[size, srv].next()
                    response = client.post(
                        f"http://127.0.0.1:{ports[srv]}/api/v1/sessions/{session_id}/turns",
                        json={"content": CONTENT},
                    )
                    if response.status_code != 200:
                        raise SystemExit(
                            f"turn answered {response.status_code}: {response.text[:300]}"
                        )
                    if response.json()["assistant_message"]["content"] != CONTENT:
                        raise SystemExit("the turn's answer is not the fake's echo")
                    bodies[size] = fake.last_request.body

                def model_call(size: str) -> None:
                    response = client.post(f"{fake.base_url}/chat/completions", json=bodies[size])
                    if response.status_code != 200:
                        raise SystemExit(f"the fake answered {response.status_code}")
                    response.json()

                def bind(fn: Callable[..., None], *a: str) -> Callable[[], None]:
                    return lambda: fn(*a)

                variants: list[tuple[str, Callable[[], None]]] = []
                for srv in servers:
                    variants += [
                        (f"bare@{srv}", bind(get, srv, "/bench/bare")),
                        (f"auth@{srv}", bind(get, srv, "/bench/auth")),
                        (f"turn_small@{srv}", bind(turn, srv, "small")),
                        (f"turn_long@{srv}", bind(turn, srv, "long")),
                    ]
                variants += [(f"model_{size}", bind(model_call, size)) for size in SIZES]
                # a model call needs a body its kind of turn sent: one untimed turn of each first
                for size in SIZES:
                    for srv in servers:
                        turn(srv, size)
                times: dict[str, list[int]] = {name: [] for name, _ in variants}
                for i in range(rounds):
                    shift = i % len(variants)
                    rec.recording = i >= args.warmup
                    for name, fn in variants[shift:] + variants[:shift]:
                        rec.label = name
                        t0 = time.perf_counter_ns()
                        fn()
                        elapsed = time.perf_counter_ns() - t0
                        if i >= args.warmup:
                            times[name].append(elapsed)
                rec.recording = False
                calls = len(fake.completions)
                # one model call per turn (2 per server and round) + 2 direct calls a round
                expected = 2 * len(servers) * (rounds + 1) + 2 * rounds
                if calls != expected:
                    print(f"FAIL: the fake saw {calls} model calls, {expected} expected")
                    return 1
                profile_text = ""
                if args.profile:
                    profile_text = profile_turns(app, client, ports["new"], rotations)
            finally:
                client.close()
                for server, thread in zip(servers.values(), threads, strict=True):
                    server.shutdown()
                    thread.join(timeout=10)
                    server.server_close()
                rt.close()
    finally:
        fake.stop()
    return report(times, rec.samples, bodies, list(servers), profile_text)


def stats(samples: list[int]) -> list[str]:
    return [str(len(samples)), ms(median(samples)), ms(percentile(samples, 99))]


def p50(samples: list[int] | None) -> str:
    return ms(median(samples)) if samples else ""


def report(
    times: dict[str, list[int]],
    s: dict[str, list[int]],
    bodies: dict[str, Any],
    served: list[str],
    profile_text: str,
) -> int:
    checks: list[tuple[str, bool]] = []
    print()
    for srv in served:
        title = SERVERS[srv]
        bare = times[f"bare@{srv}"]
        rows = [
            ["GET /bench/bare (bare Flask view)", *stats(bare), p50(s[f"app:bare@{srv}"]), ""],
            [
                "GET /bench/auth (same, token check)",
                *stats(times[f"auth@{srv}"]),
                p50(s[f"app:auth@{srv}"]),
                "",
            ],
        ]
        for size, label in SIZES.items():
            name = f"turn_{size}@{srv}"
            turn_ns, model_ns = times[name], times[f"model_{size}"]
            overhead = [t - m for t, m in zip(turn_ns, model_ns, strict=True)]
            in_app = [a - m for a, m in zip(s[f"app:{name}"], s[f"llm:{name}"], strict=True)]
            body_kb = len(json.dumps(bodies[size])) / 1024
            rows += [
                [f"turn_total, {label}", *stats(turn_ns), p50(s[f"app:{name}"]),
                 p50(s[f"fake:{name}"])],
                [f"  model_call ({body_kb:.0f} KB body, straight to fake)", *stats(model_ns),
                 "", p50(s[f"fake:model_{size}"])],
                ["  overhead = turn_total - model_call", *stats(overhead), "", ""],
                ["  in-app: app WSGI - LLMClient.complete", *stats(in_app), "", ""],
            ]  # fmt: skip
            if srv != "new":
                continue
            over_p50, bare_p50 = median(overhead), median(bare)
            checks += [
                (
                    f"{label}: overhead p50 < {TARGET_OVERHEAD_MS:g} ms "
                    f"(measured {over_p50 / NS_PER_MS:.3f} ms)",
                    over_p50 / NS_PER_MS < TARGET_OVERHEAD_MS,
                ),
                (
                    f"{label}: overhead p50 <= {TARGET_BARE_RATIO:g}x bare endpoint p50 "
                    f"(measured {over_p50 / bare_p50:.1f}x of {bare_p50 / NS_PER_MS:.3f} ms)",
                    over_p50 <= TARGET_BARE_RATIO * bare_p50,
                ),
            ]
        print(f"-- {title}{' (TARGETS)' if srv == 'new' else ' (no target)'}")
        print_table(["client-measured", "n", "p50 ms", "p99 ms", "app p50", "model p50"], rows)
        print()
    print(
        "   app p50: the app's own WSGI time (in-process); model p50: the fake's own WSGI time"
        " for that request's model call"
    )
    print()
    columns = [(size, srv) for size in SIZES for srv in served]
    parts = {(size, srv): breakdown(s, f"turn_{size}@{srv}") for size, srv in columns}
    steps = [
        ("app", "app WSGI total (in-process)"),
        *STEPS,
        ("rest_run_turn", "  rest of run_turn (transaction begin/commit, meta, specs...)"),
        ("rest_app", "rest: Flask routing, marshmallow load/dump, JSON"),
    ]
    rows = []
    for kind, title in steps:
        cells = [parts[column].get(kind) for column in columns]
        if all(cells):
            rows.append([title, *(p50(cell) for cell in cells)])
    heads = ["in-app steps of a turn, p50 ms"]
    heads += [
        f"{'small' if size == 'small' else '200-msg'}{' ' + srv if len(served) > 1 else ''}"
        for size, srv in columns
    ]
    print_table(heads, rows)
    if len(served) > 1:
        print("   new: a new thread per connection; pool: reused threads.")
    print("   Medians of each step on its own; they need not add up to the total's median.")
    if profile_text:
        print()
        print(profile_text)
    print()
    return verdict(checks)


def profile_turns(
    app: Any, client: httpx.Client, port: int, rotations: dict[tuple[str, str], Rotation]
) -> str:
    """cProfile of small-session turns, measured in the app's request threads."""
    profiler = cProfile.Profile()
    inner = app.wsgi_app

    def profiled(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        profiler.enable()
        try:
            return inner(environ, start_response)
        finally:
            profiler.disable()

    app.wsgi_app = profiled
    rotation = rotations["small", "new"]
    rotation.turns = -(-rotation.turns // rotation.every) * rotation.every  # fresh sessions
    for _ in range(PROFILE_TURNS):
        session_id = rotation.next()
        client.post(
            f"http://127.0.0.1:{port}/api/v1/sessions/{session_id}/turns",
            json={"content": CONTENT},
        )
    app.wsgi_app = inner
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative")
    out.write(f"-- cProfile of {PROFILE_TURNS} small-session turns (app threads, cumulative)\n")
    stats.print_stats(45)
    stats.sort_stats("tottime").print_stats(25)
    return out.getvalue()


if __name__ == "__main__":
    sys.exit(main())
