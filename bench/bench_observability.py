"""What metrics and logging cost a chat turn: the same turns against two `eonyx serve`, side
by side, one with them on and one with them off.

    .venv/bin/python bench/bench_observability.py [--turns 400] [--warmup 40]

Both servers are started as a user starts them (gunicorn with --workers 2, the background
worker, an embedded Redis each, SQLite each in its own temporary DATA_DIR); the model is
tests/fake_llm.py (a thread of this script, answering at once), shared by both.

- on:  METRICS_TOKEN set (so every process sums its metrics in DATA_DIR/run/metrics),
       LOG_FORMAT=json, LOG_LEVEL=info (a JSON access line and a `turn ok` line per turn);
- off: no METRICS_TOKEN (prometheus_client never imported), LOG_FORMAT=text,
       LOG_LEVEL=warning (the turn line dropped; gunicorn's access line, in text);
- off again: a second server exactly like off, the control: "off again / off" is how much
  two identical servers differ on this machine in this run (the noise floor).

One httpx.Client per server sends the turns, interleaved: each round sends one turn to each
server, in an order that rotates, so all see the same moments of a busy machine. A fresh
session every --turns-per-session turns. Figures: client-measured latency p50 and p90 per
mode, and on/off of the medians. Target: on/off p50 < 1.05. At the end a scrape of the on
server's /metrics must count every turn it was sent (the metrics were really on).
"""

from __future__ import annotations

import re
import sys
import time
from contextlib import ExitStack
from types import SimpleNamespace

import httpx
from _common import (
    NS_PER_MS,
    ROOT,
    base_parser,
    bench_account,
    median,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)
from _serve import eonyx_serve

from shared.db.database import Database

sys.path.insert(0, str(ROOT))  # tests/ is not installed; _common put the repo root first
from tests.fake_llm import FakeLLM

TARGET_RATIO = 1.05
TOKEN = "bench-metrics-token-0123456789"
OFF = {"LOG_FORMAT": "text", "LOG_LEVEL": "warning"}
MODES = {
    "on": {"METRICS_TOKEN": TOKEN, "LOG_FORMAT": "json", "LOG_LEVEL": "info"},
    "off": OFF,
    "off again": OFF,  # the control: what two identical servers differ by on this machine
}


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=400, help="timed turns per mode")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--turns-per-session", type=int, default=20)
    args = parser.parse_args()

    fake = FakeLLM().start()
    try:
        with ExitStack() as stack:
            clients: dict[str, httpx.Client] = {}
            spaces = {}
            for mode, extra in MODES.items():
                ws = stack.enter_context(workspace(args.database_url, keep=args.keep))
                spaces[mode] = ws
                database = Database(ws.database_url)
                _, token = bench_account(SimpleNamespace(db=database))
                database.dispose()
                settings = {
                    "DATA_DIR": str(ws.data_dir),
                    "DATABASE_URL": ws.database_url,
                    "HOME": str(ws.root),
                    "EONYX_LLM_BASE_URL": fake.base_url,
                    "EONYX_LLM_MODEL": "fake-model",
                    "LLM_MAX_RETRIES": "0",
                } | extra
                served = stack.enter_context(
                    eonyx_serve(
                        settings,
                        log=ws.root / "serve.log",
                        args=["--workers", "2"],
                    )
                )
                client = httpx.Client(
                    base_url=served.url,
                    timeout=30,
                    headers={"Authorization": f"Bearer {token}"},
                )
                stack.callback(client.close)
                clients[mode] = client
            print_header(
                "bench_observability",
                spaces["on"],
                f"{args.turns} turns per mode, interleaved, gunicorn --workers 2",
            )
            samples = run(clients, args)
            counted = turns_counted(clients["on"])
    finally:
        fake.stop()

    sent = args.warmup + args.turns
    rows = []
    for mode in MODES:
        values = samples[mode]
        rows.append(
            [
                mode,
                f"{median(values) / NS_PER_MS:.2f}",
                f"{percentile(values, 90) / NS_PER_MS:.2f}",
            ]
        )
    ratio = median(samples["on"]) / median(samples["off"])
    p90_ratio = percentile(samples["on"], 90) / percentile(samples["off"], 90)
    control = median(samples["off again"]) / median(samples["off"])
    print_table(["turn over HTTP", "p50 ms", "p90 ms"], rows)
    print(f"   on / off: p50 {ratio:.3f}, p90 {p90_ratio:.3f}")
    print(f"   control, off again / off: p50 {control:.3f} (the noise floor of this run)")
    print(f"   /metrics of the on server counted {counted:g} turns (sent {sent})")
    return verdict(
        [
            (f"on/off p50 < {TARGET_RATIO}", ratio < TARGET_RATIO),
            ("the on server's metrics counted every turn", counted == sent),
        ]
    )


def run(clients: dict[str, httpx.Client], args: SimpleNamespace) -> dict[str, list[int]]:
    sessions = {mode: "" for mode in clients}
    done = {mode: 0 for mode in clients}
    samples: dict[str, list[int]] = {mode: [] for mode in clients}
    order = list(clients)
    for round_number in range(args.warmup + args.turns):
        shift = round_number % len(order)
        for mode in order[shift:] + order[:shift]:
            client = clients[mode]
            if done[mode] % args.turns_per_session == 0:
                created = client.post("/api/v1/sessions", json={})
                sessions[mode] = created.json()["id"]
            content = f"Question {round_number} about the cache and the index"
            started = time.perf_counter_ns()
            response = client.post(
                f"/api/v1/sessions/{sessions[mode]}/turns", json={"content": content}
            )
            elapsed = time.perf_counter_ns() - started
            if response.status_code != 200:
                raise SystemExit(f"{mode}: {response.status_code} {response.text[:300]}")
            done[mode] += 1
            if round_number >= args.warmup:
                samples[mode].append(elapsed)
    return samples


def turns_counted(client: httpx.Client) -> float:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    response.raise_for_status()
    found = re.search(r'^eonyx_turn_seconds_count\{outcome="ok"\} (\S+)$', response.text, re.M)
    return float(found.group(1)) if found else 0.0


if __name__ == "__main__":
    raise SystemExit(main())
