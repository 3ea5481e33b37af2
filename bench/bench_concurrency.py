"""Chat turns under concurrency against `eonyx serve`, beside a bare endpoint on the same server.

    .venv/bin/python bench/bench_concurrency.py [--clients 16] [--seconds 10]
        [--workers 2] [--threads 32] [--rounds 1] [--dev] [--keep]

Starts `eonyx serve` (gunicorn, embedded Redis, SQLite, a worker) on a temporary DATA_DIR,
with the fake OpenAI-compatible model of tests/fake_llm.py in a process of its own (it answers
every request at once, echoing the user). Then, per round, for --seconds each:

- /healthz: --clients threads, each with its own keep-alive connection, GET /healthz in a loop;
- turns: --clients threads, each on a session of its own, POST a turn in a loop.

It prints both rates and their ratio (healthz requests/s over turns/s), the turns' latency,
and the errors. Afterwards it counts the messages in every session file: each completed turn
must have left exactly its user message and its answer there (a lost message is one that a
200 answered and the file does not hold).

Target (issue 9): ratio <= 3 (turns/s at least a third of the bare rate), zero errors, zero
lost messages. The clients share the machine with the server: on 2 cores the client threads
take a good part of one, for both measurements alike.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from _common import ROOT, median, percentile, print_table, verdict

TARGET_RATIO = 3.0
URL_LINE = re.compile(r"Eonyx is running at (http://\S+)")
PASSWORD = "correct horse battery"
FAKE = f"""
import signal, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.fake_llm import FakeLLM
fake = FakeLLM().start()
print(fake.base_url, flush=True)
signal.sigwait({{signal.SIGTERM, signal.SIGINT}})
fake.stop()
"""


@dataclass
class Tally:
    done: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    turns: dict[str, int] = field(default_factory=dict)  # session id -> turns answered 200


def hammer(clients: int, seconds: float, make: Callable[[int], Callable[[], str | None]]) -> Tally:
    """`clients` threads calling their own `make(i)()` for `seconds`; a returned string is an
    error. Every thread is ready before the clock starts."""
    tally, lock = Tally(), threading.Lock()
    start, stop = threading.Barrier(clients + 1), threading.Event()

    def run(i: int) -> None:
        call = make(i)
        start.wait()
        while not stop.is_set():
            t0 = time.perf_counter()
            error = call()
            elapsed = time.perf_counter() - t0
            with lock:
                if error:
                    tally.errors.append(error)
                elif not stop.is_set():  # one that ends after the window does not count
                    tally.done += 1
                    tally.latencies.append(elapsed)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return tally


class Server:
    """The fake model and `eonyx serve`, on a temporary directory; stop() ends both."""

    def __init__(self, root: Path, workers: int, threads: int, dev: bool) -> None:
        self.root = root
        self.fake = subprocess.Popen(
            [sys.executable, "-c", FAKE], stdout=subprocess.PIPE, text=True
        )
        assert self.fake.stdout is not None
        base_url = self.fake.stdout.readline().strip()
        home = root / "home"
        home.mkdir()
        drop = ("REDIS_URL", "DATABASE_URL", "XDG_DATA_HOME", "EONYX_URL", "EONYX_TOKEN")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env |= {
            "DATA_DIR": str(root / "data"),
            "HOME": str(home),
            "EONYX_LLM_BASE_URL": base_url,
            "EONYX_LLM_MODEL": "fake-model",
            "PYTHONUNBUFFERED": "1",
        }
        eonyx = str(Path(sys.executable).with_name("eonyx"))
        self.log = (root / "serve.log").open("w")
        argv = [eonyx, "serve", "--port", "0", "--workers", str(workers), "--threads", str(threads)]
        argv += ["--dev"] if dev else []
        self.serve = subprocess.Popen(
            argv, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.url = self._wait_for_url()
        created = subprocess.run(
            [eonyx, "users", "create", "bench", "--password", PASSWORD],
            env=self.env,
            capture_output=True,
            text=True,
        )
        assert created.returncode == 0, created.stderr

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = URL_LINE.search((self.root / "serve.log").read_text())
            if found:
                return found.group(1)
            if self.serve.poll() is not None:
                break
            time.sleep(0.1)
        raise SystemExit("eonyx serve did not start:\n" + (self.root / "serve.log").read_text())

    def stop(self) -> None:
        self.serve.send_signal(signal.SIGINT)
        self.serve.wait(60)
        self.fake.send_signal(signal.SIGTERM)
        self.fake.wait(10)
        self.log.close()


def login(url: str) -> str:
    body = {"username": "bench", "password": PASSWORD}
    response = httpx.post(f"{url}/api/v1/auth/login", json=body, timeout=10)
    response.raise_for_status()
    return response.json()["token"]


def healthz_client(url: str) -> Callable[[int], Callable[[], str | None]]:
    def make(_i: int) -> Callable[[], str | None]:
        http = httpx.Client(base_url=url, timeout=30)

        def call() -> str | None:
            try:
                status = http.get("/healthz").status_code
            except httpx.HTTPError as exc:
                return f"healthz: {type(exc).__name__}"
            return None if status == 200 else f"healthz: {status}"

        return call

    return make


def turn_client(url: str, token: str, tally_turns: dict[str, int]) -> Callable[..., Callable]:
    lock = threading.Lock()

    def make(i: int) -> Callable[[], str | None]:
        http = httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"})
        created = http.post("/api/v1/sessions", json={"title": f"client {i}"})
        created.raise_for_status()
        session_id = created.json()["id"]
        with lock:
            tally_turns.setdefault(session_id, 0)
        path = f"/api/v1/sessions/{session_id}/turns"

        def call() -> str | None:
            try:
                response = http.post(path, json={"content": f"What did we decide, client {i}?"})
            except httpx.HTTPError as exc:
                return f"turn: {type(exc).__name__}"
            if response.status_code != 200:
                return f"turn: {response.status_code} {response.text[:200]}"
            with lock:
                tally_turns[session_id] += 1
            return None

        return call

    return make


def count_messages(data_dir: Path) -> dict[str, int]:
    """Message records per session file, read from the files themselves."""
    counts: dict[str, int] = {}
    for path in data_dir.glob("users/*/sessions/*.jsonl"):
        with path.open() as lines:
            counts[path.stem] = sum(
                1 for line in lines if line.strip() and json.loads(line).get("type") == "message"
            )
    return counts


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="eonyx serve --workers")
    parser.add_argument("--threads", type=int, default=32, help="eonyx serve --threads")
    parser.add_argument("--rounds", type=int, default=1, help="healthz then turns, N times")
    parser.add_argument("--dev", action="store_true", help="eonyx serve --dev (werkzeug)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="eonyx-bench-"))
    server = Server(root, args.workers, args.threads, args.dev)
    turns_by_session: dict[str, int] = {}
    bare, turns = Tally(), Tally()
    try:
        token = login(server.url)
        http = "--dev: werkzeug" if args.dev else f"gunicorn {args.workers}x{args.threads} threads"
        print(
            f"== bench_concurrency  (eonyx serve, {http}, SQLite, embedded Redis; "
            "fake model in its own process)"
        )
        print(f"   {args.clients} clients, {args.seconds:g} s each, {os.cpu_count()} cpu")
        for _ in range(args.rounds):
            for into, make in (
                (bare, healthz_client(server.url)),
                (turns, turn_client(server.url, token, turns_by_session)),
            ):
                got = hammer(args.clients, args.seconds, make)
                into.done += got.done
                into.errors += got.errors
                into.latencies += got.latencies
    finally:
        server.stop()

    seconds = args.seconds * args.rounds
    bare_rate, turn_rate = bare.done / seconds, turns.done / seconds
    ratio = bare_rate / turn_rate if turn_rate else float("inf")
    counts = count_messages(root / "data")
    lost = sum(max(0, 2 * n - counts.get(s, 0)) for s, n in turns_by_session.items())
    extra = sum(max(0, counts.get(s, 0) - 2 * n) for s, n in turns_by_session.items())
    rows = []
    for name, tally, rate in (("GET /healthz", bare, bare_rate), ("POST turn", turns, turn_rate)):
        lat = tally.latencies or [0.0]
        rows.append(
            [
                name,
                str(tally.done),
                f"{rate:.1f}",
                f"{median(lat) * 1000:.1f}",
                f"{percentile(lat, 99) * 1000:.1f}",
                str(len(tally.errors)),
            ]
        )
    print_table(["endpoint", "done", "per s", "p50 ms", "p99 ms", "errors"], rows)
    print(f"   ratio healthz/turns: {ratio:.2f}x")
    print(
        f"   session files: {len(turns_by_session)} sessions, {sum(counts.values())} messages, "
        f"{lost} lost, {extra} unaccounted for (a turn cut off by the end of the run)"
    )
    for error in sorted(set(bare.errors + turns.errors))[:5]:
        print(f"   error: {error}")
    if args.keep:
        print(f"(kept {root})")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return verdict(
        [
            (f"turns/s at least 1/{TARGET_RATIO:g} of /healthz req/s", ratio <= TARGET_RATIO),
            ("zero errors", not bare.errors and not turns.errors),
            ("zero lost messages", lost == 0),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
