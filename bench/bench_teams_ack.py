"""How fast the Teams endpoint acknowledges activities, 20 at a time.

    .venv/bin/python bench/bench_teams_ack.py [--clients 20] [--per-client 50]
        [--database-url URL] [--redis-url URL]

The API runs as in production: gunicorn with deploy/gunicorn.conf.py (its defaults: gthread,
one process per core, at least 2, 8 threads each) in a child process, queueing each message's
turn on Celery through Redis (an embedded Redis in the temporary directory, or --redis-url:
use a spare database, its `eonyx` queue is emptied at the end). No worker runs: only the
acknowledgement is measured. The Bot Framework is tests/fake_botframework.py in this process;
it serves the OpenID metadata and the signing keys, fetched once per gunicorn process during
the warm-up.

`--clients` threads (each with its own keep-alive connection, as a channel would hold, and
the standard library's http.client, the lightest client at hand: the clients share the
machine's two cores with the server) post
signed message activities back to back, so that many are in flight at all times; every
activity has its own id and one of 50 conversations. Latency is measured by the client from
sending the request to reading the 202. Afterwards the queue must hold one job per activity.
Target: p99 < 100 ms with 20 clients. For reference, the same with one client.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import redis
from _common import ROOT, base_parser, median, percentile, print_header, print_table, verdict
from _common import workspace as make_workspace

from shared.infra.embedded_redis import EmbeddedRedis

sys.path.insert(0, str(ROOT))  # tests/ is not installed; _common put the repo root first
from tests.conftest import free_port
from tests.fake_botframework import FakeBotFramework

TARGET_P99_MS = 100.0
QUEUE = "eonyx"  # workers/app.py QUEUE: Celery's Redis list of pending jobs
CONVERSATIONS = 50


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (gunicorn's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    pids = [pid] + [
        int(entry.name) for entry in Path("/proc").glob("[0-9]*") if _parent(entry) == pid
    ]
    total = 0.0
    for each in pids:
        try:
            fields = (Path("/proc") / str(each) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _parent(entry: Path) -> int | None:
    try:
        return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def start_gunicorn(env: dict[str, str], port: int, log: Any) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py")]
    env = env | {"EONYX_BIND": f"127.0.0.1:{port}", "GUNICORN_LOG_LEVEL": "warning"}
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not become ready")


def drive(port: int, bf: FakeBotFramework, clients: int, per_client: int) -> list[float]:
    """Latencies (ms) of clients x per_client activities, `clients` in flight at a time."""
    token = bf.sign()  # the channel reuses one token for many activities
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client(number: int) -> None:
        bodies = [
            json.dumps(
                bf.activity(
                    f"message {number}-{i}",
                    conversation_id=f"a:1-conversation-{(number * per_client + i) % CONVERSATIONS}",
                )
            )
            for i in range(per_client)
        ]
        mine: list[float] = []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            start.wait()
            for body in bodies:
                began = time.perf_counter()
                conn.request("POST", "/integrations/teams/messages", body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                mine.append((time.perf_counter() - began) * 1000)
                if response.status != 202:
                    failures.append(f"{response.status} {data[:200]!r}")
        finally:
            conn.close()
        with lock:
            latencies.extend(mine)

    def guarded(number: int) -> None:
        try:
            client(number)
        except Exception as exc:  # noqa: BLE001 - reported below, the run fails
            failures.append(repr(exc))

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"{len(failures)} activities were not acknowledged: {failures[:3]}")
    return latencies


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=50)
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()

    bf = FakeBotFramework().start()
    embedded: EmbeddedRedis | None = None
    server: subprocess.Popen[bytes] | None = None
    try:
        with make_workspace(args.database_url, keep=args.keep) as ws:
            redis_url = args.redis_url
            if redis_url is None:
                embedded = EmbeddedRedis(ws.root / "redis")
                redis_url = embedded.start()
            env = {
                key: value
                for key, value in os.environ.items()
                if key not in ("XDG_DATA_HOME", "GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")
            }
            env |= bf.settings_env | {
                "DATA_DIR": str(ws.data_dir),
                "DATABASE_URL": ws.database_url,
                "REDIS_URL": redis_url,
                "HOME": str(ws.root),
            }
            queue = redis.Redis.from_url(redis_url)
            queue.delete(QUEUE)
            port = free_port()
            with (ws.root / "gunicorn.log").open("wb") as log:
                server = start_gunicorn(env, port, log)
                print_header(
                    "bench_teams_ack",
                    ws,
                    f"gunicorn gthread, {args.clients} clients x {args.per_client} activities",
                )
                drive(port, bf, args.clients, 10)  # warm-up: every process fetches the keys
                drive(port, bf, 1, 20)
                queue.delete(QUEUE)
                load = os.getloadavg()[0]
                began, cpu_before = time.perf_counter(), cpu_seconds(server.pid)
                loaded = drive(port, bf, args.clients, args.per_client)
                seconds = time.perf_counter() - began
                server_cpu = cpu_seconds(server.pid) - cpu_before
                queued = queue.llen(QUEUE)
                alone = drive(port, bf, 1, 100)
                queue.delete(QUEUE)
                queue.close()
    finally:
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
        if embedded is not None:
            embedded.stop()
        bf.stop()

    rows = []
    for label, values in ((f"{args.clients} in flight", loaded), ("1 in flight", alone)):
        rows.append(
            [
                label,
                str(len(values)),
                f"{median(values):.2f}",
                f"{percentile(values, 90):.2f}",
                f"{percentile(values, 99):.2f}",
                f"{max(values):.2f}",
            ]
        )
    print_table(["acknowledgement", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"], rows)
    print(
        f"   {len(loaded) / seconds:.0f} activities/s under load; {queued} jobs queued; "
        f"server CPU {server_cpu / len(loaded) * 1000:.2f} ms per activity; "
        f"machine load average {load:.1f} before the run"
    )
    p99 = percentile(loaded, 99)
    return verdict(
        [
            (f"p99 with {args.clients} in flight < {TARGET_P99_MS:.0f} ms", p99 < TARGET_P99_MS),
            ("one queued turn per activity", queued == len(loaded)),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
