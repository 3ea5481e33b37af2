"""Server time of one chat turn as the session grows, over HTTP against `eonyx serve`.

    .venv/bin/python bench/bench_turn.py [--lengths 10,1000,4000] [--turns 200]
        [--database-url URL] [--redis-url URL] [--serve-arg=--workers=2 ...]

`eonyx serve` is started as a user starts it (a child process, embedded Redis unless
--redis-url, its worker, on a free loopback port). The model is the fake OpenAI-compatible
server of tests/fake_llm.py (a thread of this script), with a 32,000-token window, so the
long sessions are summarized: it echoes the user's message at once and answers a summary
request with a short summary. For each length L in --lengths, sessions hold L messages
(~500 characters each, a tool call now and then) before their first turn; a fresh session
every --turns-per-session turns. A session's first turn reads it cold and compacts it (the
summary's model call included): it is timed apart ("first turn") and is not in the targets.
One httpx.Client sends, interleaved in an order shuffled each round (seeded), per round:

- GET /healthz (the bare endpoint) and GET /api/v1/users/me (the same behind the token check);
- POST /api/v1/sessions/<id>/turns {"content": ...} at each length;
- after each turn, the model call alone: the body that turn sent to the model, POSTed by the
  same client straight to the fake (encode, loopback, the fake's work, decode).

server time = turn latency - model call, paired per round; p50 and p99 per length.
Targets, from the one run: server time p50 at the longest length within 1.5x of the
shortest; p50 < 5 ms at the shortest; p50 within 4x of the bare endpoint's at every length.

Then the breakdown (--breakdown-turns, 0 skips it): the same app built in this process and
served from a thread, turns at each length with every step timed and the database
transactions, statements and pool checkouts, Redis commands and jobs counted per turn.
`--profile` adds a cProfile of in-process turns at the longest length.
"""

from __future__ import annotations

import os
import random
import sys
import time
from types import SimpleNamespace

import httpx
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
from _serve import eonyx_serve
from _turn_driver import Driver, Model, prepare_sessions, run_rounds

from shared.db.database import Database
from shared.files.session_store import SessionStore
from tests.fake_llm import FakeLLM

TARGET_SERVER_MS = 5.0
TARGET_GROWTH = 1.5
TARGET_BARE_RATIO = 4.0
WINDOW = 32_000


def parse_lengths(value: str) -> list[int]:
    lengths = sorted({int(part) for part in value.split(",") if part.strip()})
    if not lengths or lengths[0] < 0:
        raise SystemExit("--lengths takes message counts such as 10,1000,4000")
    return lengths


def server_times(times: dict[str, list[int]], length: int) -> list[int]:
    turn_ns, model_ns = times[f"turn_{length}"], times[f"model_{length}"]
    return [t - m for t, m in zip(turn_ns, model_ns, strict=True)]


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="10,1000,4000", help="messages before a turn")
    parser.add_argument("--turns", type=int, default=200, help="timed turns per length")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument("--redis-url", default=None, help="REDIS_URL for the server")
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="passed on to `eonyx serve`"
    )
    parser.add_argument("--breakdown-turns", type=int, default=60, help="per length; 0: none")
    parser.add_argument("--profile", action="store_true", help="cProfile in-process turns")
    parser.add_argument(
        "--breakdown-cpu",
        action="store_true",
        help="the breakdown in CPU time of the serving thread instead of wall time",
    )
    args = parser.parse_args()
    lengths = parse_lengths(args.lengths)
    rounds = args.warmup + args.turns
    every = args.turns_per_session
    rng = random.Random(5)
    histories = {length: make_history(rng, length) for length in lengths}

    model = Model()
    fake = FakeLLM().start()
    fake.set_default(model)
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
            database = Database(ws.database_url)
            principal, token = bench_account(SimpleNamespace(db=database))
            database.dispose()
            store = SessionStore(ws.data_dir)
            print_header(
                "bench_turn",
                ws,
                f"{args.turns} turns per length, window {WINDOW:,} tokens, "
                f"redis: {args.redis_url or 'embedded'}",
            )
            print(f"   load average at start: {load_average()} (the machine is shared)")
            with (
                eonyx_serve(env, log=ws.root / "serve.log", args=args.serve_arg) as server,
                httpx.Client(timeout=120) as client,
            ):
                print(f"   server: {' '.join(server.command[1:])} (pid {server.pid})")
                client.headers["Authorization"] = f"Bearer {token}"

                def create() -> str:
                    response = client.post(f"{server.url}/api/v1/sessions", json={})
                    if response.status_code != 201:
                        raise SystemExit(f"creating a session answered {response.status_code}")
                    return str(response.json()["id"])

                started = time.perf_counter()
                count = -(-(rounds + 1) // every)
                rotations = prepare_sessions(
                    store, principal.user_id, create, histories, count, every
                )
                print(
                    f"   setup: {count} sessions per length in "
                    f"{time.perf_counter() - started:.1f} s; fake model at {fake.base_url}"
                )
                driver = Driver(client, server.url, fake, model)
                times, firsts = run_rounds(driver, rotations, rounds, args.warmup)
                compacted = driver.compacted
            breakdown_text = ""
            if args.breakdown_turns > 0:
                from _turn_breakdown import run_breakdown

                breakdown_text = run_breakdown(
                    ws,
                    env,
                    fake,
                    model,
                    histories,
                    args.breakdown_turns,
                    every,
                    args.profile,
                    args.breakdown_cpu,
                )
    finally:
        fake.stop()
    return report(times, firsts, lengths, compacted, breakdown_text)


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def report(
    times: dict[str, list[int]],
    firsts: dict[int, list[int]],
    lengths: list[int],
    compacted: int,
    breakdown_text: str,
) -> int:
    print()
    bare = times["bare"]
    rows = [
        ["GET /healthz (bare endpoint)", str(len(bare)), ms(median(bare)),
         ms(percentile(bare, 99)), "", ""],
        ["GET /api/v1/users/me (token check)", str(len(times["auth"])),
         ms(median(times["auth"])), ms(percentile(times["auth"], 99)), "", ""],
    ]  # fmt: skip
    servers = {length: server_times(times, length) for length in lengths}
    for length in lengths:
        turn_ns, model_ns, server = (
            times[f"turn_{length}"],
            times[f"model_{length}"],
            servers[length],
        )
        rows += [
            [f"turn at {length:,} messages", str(len(turn_ns)), ms(median(turn_ns)),
             ms(percentile(turn_ns, 99)), "", ms(median(firsts[length]))],
            ["  model call alone (straight to the fake)", str(len(model_ns)),
             ms(median(model_ns)), ms(percentile(model_ns, 99)), "", ""],
            ["  server time = turn - model call", str(len(server)), ms(median(server)),
             ms(percentile(server, 99)), f"{median(server) / median(bare):.1f}x", ""],
        ]  # fmt: skip
    print_table(["client-measured over HTTP", "n", "p50 ms", "p99 ms", "/ bare", "first p50"], rows)
    print(
        "   first p50: a session's first turn (cold read of the file, and compaction with its"
        " summary's model call when the history needs it); not in the targets."
    )
    print(f"   timed turns that compacted: {compacted} (0 expected)")
    print(f"   load average at the end: {load_average()}")
    if breakdown_text:
        print()
        print(breakdown_text)
    print()
    short, long = lengths[0], lengths[-1]
    p50 = {length: median(servers[length]) for length in lengths}
    bare_p50 = median(bare)
    checks = [
        (
            f"server time p50 at {long:,} within {TARGET_GROWTH:g}x of {short:,} messages "
            f"(measured {p50[long] / p50[short]:.2f}x: {p50[long] / NS_PER_MS:.2f} ms against "
            f"{p50[short] / NS_PER_MS:.2f} ms)",
            p50[long] <= TARGET_GROWTH * p50[short],
        ),
        (
            f"server time p50 < {TARGET_SERVER_MS:g} ms at {short:,} messages "
            f"(measured {p50[short] / NS_PER_MS:.2f} ms)",
            p50[short] / NS_PER_MS < TARGET_SERVER_MS,
        ),
    ]
    for length in lengths:
        checks.append(
            (
                f"server time p50 at {length:,} messages <= {TARGET_BARE_RATIO:g}x the bare "
                f"endpoint (measured {p50[length] / bare_p50:.1f}x of "
                f"{bare_p50 / NS_PER_MS:.2f} ms)",
                p50[length] <= TARGET_BARE_RATIO * bare_p50,
            )
        )
    checks.append(("no timed turn compacted", compacted == 0))
    return verdict(checks)


if __name__ == "__main__":
    sys.exit(main())
