"""Chat turns under concurrency against `eonyx serve`, beside a bare endpoint on the same server.

    .venv/bin/python bench/bench_concurrency.py [--clients 16] [--seconds 10] [--rounds 1]
        [--workers 2] [--threads 32] [--dev] [--model quick|fake] [--floor [bare|durable]]
        [--database-url URL] [--keep]

Starts `eonyx serve` (gunicorn, embedded Redis, a worker; SQLite unless --database-url) on a
temporary DATA_DIR, and a model that answers every request at once in a process of its own:
bench/_quick_model.py (keep-alive, next to no CPU) or, with --model fake, the test suite's
tests/fake_llm.py (werkzeug: a new connection and about a millisecond of CPU per call). Then,
per round, for --seconds each:

- /healthz: --clients threads, each with its own keep-alive connection, GET /healthz in a loop;
- turns: --clients threads, each on a session of its own, POST a turn in a loop.

It prints both rates and their ratio (healthz requests/s over turns/s), the turns' latency, the
errors, and the CPU each side spent per request (read from /proc: the server's process group,
the model's process, and this script's client threads). Afterwards it counts the messages in
every session file: each completed turn must have left exactly its user message and its answer
there (a lost message is one that a 200 answered and the file does not hold).

Target (issue 9): ratio <= 3 (turns/s at least a third of the bare rate), zero errors, zero
lost messages. The clients share the machine with the server: on 2 cores the client threads
take a good part of one, for both measurements alike.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
from _common import (
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
from _serve import Served, eonyx_serve, free_port, http_server

from cli.serve import HTTP_THREADS, HTTP_WORKERS
from shared.db import Database

TARGET_RATIO = 3.0
FAKE = f"""
import signal, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.fake_llm import FakeLLM
fake = FakeLLM().start()
print(fake.base_url, flush=True)
signal.sigwait({{signal.SIGTERM, signal.SIGINT}})
fake.stop()
"""
MODELS = {
    "quick": [sys.executable, str(Path(__file__).with_name("_quick_model.py"))],
    "fake": [sys.executable, "-c", FAKE],
}


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


@contextmanager
def model_process(kind: str) -> Iterator[tuple[str, int]]:
    """The model in a process of its own: (its base URL, its pid)."""
    process = subprocess.Popen(MODELS[kind], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip(), process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)


def cpu_by_process(root: int) -> dict[int, tuple[str, float]]:
    """pid -> (command line, user + system CPU seconds) of a process and all its descendants,
    threads included (Linux /proc; nothing elsewhere)."""
    tick, table = os.sysconf("SC_CLK_TCK"), {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue  # gone meanwhile
            cpu = (int(fields[11]) + int(fields[12])) / tick
            table[int(entry.name)] = (int(fields[1]), command, cpu)
    chosen, more = set(), {root}
    while more:
        chosen |= more
        more = {pid for pid, (parent, _, _) in table.items() if parent in more} - chosen
    return {pid: table[pid][1:] for pid in chosen if pid in table}


def server_side(command: str) -> str:
    if "redis-server" in command:
        return "Redis"
    if " worker" in command:
        return "worker"
    return "HTTP"  # gunicorn's workers and arbiter, werkzeug, the `eonyx serve` supervisor


def floor_server(
    workers: int, threads: int, model_url: str, log: Path, sessions_dir: Path | None
) -> AbstractContextManager[Served]:
    """bench/_floor_app.py under gunicorn with `eonyx serve`'s worker class and sizes.

    With `sessions_dir`, each turn appends and fsyncs its two messages there (--floor durable).
    """
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread"]
    command += ["--workers", str(workers), "--threads", str(threads)]
    command += ["--bind", f"127.0.0.1:{port}", "--access-logfile", "-", "_floor_app:app"]
    env = os.environ | {"FLOOR_MODEL_URL": model_url, "PYTHONPATH": str(Path(__file__).parent)}
    if sessions_dir is not None:
        env["FLOOR_SESSIONS_DIR"] = str(sessions_dir)
    return http_server("the floor app", command, env, port, log=log)


def floor_turn_client(
    url: str, tally_turns: dict[str, int] | None
) -> Callable[[int], Callable[[], str | None]]:
    """Turns on the floor app; with `tally_turns` (--floor durable), counted per client, whose
    file is named after it."""
    lock = threading.Lock()

    def make(i: int) -> Callable[[], str | None]:
        http = httpx.Client(base_url=url, timeout=60)

        def call() -> str | None:
            try:
                said = {"content": f"What did we decide, {i}?", "session": i}
                status = http.post("/turn", json=said)
            except httpx.HTTPError as exc:
                return f"turn: {type(exc).__name__}"
            if status.status_code != 200:
                return f"turn: {status.status_code}"
            if tally_turns is not None:
                with lock:
                    tally_turns[str(i)] = tally_turns.get(str(i), 0) + 1
            return None

        return call

    return make


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


def count_messages(data_dir: Path, pattern: str = "users/*/sessions/*.jsonl") -> dict[str, int]:
    """Message records per session file, read from the files themselves."""
    counts: dict[str, int] = {}
    for path in data_dir.glob(pattern):
        with path.open() as lines:
            counts[path.stem] = sum(
                1 for line in lines if line.strip() and json.loads(line).get("type") == "message"
            )
    return counts


@dataclass
class Phase:
    """One endpoint's tally and the CPU seconds each side spent on it."""

    tally: Tally = field(default_factory=Tally)
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SIDES, 0.0))


SIDES = ("HTTP", "worker", "Redis", "model", "clients")


def run_phase(
    into: Phase,
    clients: int,
    seconds: float,
    make: Callable[[int], Callable[[], str | None]],
    measure: Callable[[], dict[str, float]],
) -> None:
    before = measure()
    got = hammer(clients, seconds, make)
    after = measure()
    into.tally.done += got.done
    into.tally.errors += got.errors
    into.tally.latencies += got.latencies
    for side in SIDES:
        into.cpu[side] += after[side] - before[side]


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=None, help="eonyx serve --workers")
    parser.add_argument("--threads", type=int, default=None, help="eonyx serve --threads")
    parser.add_argument("--rounds", type=int, default=1, help="healthz then turns, N times")
    parser.add_argument("--dev", action="store_true", help="eonyx serve --dev (werkzeug)")
    parser.add_argument("--model", choices=sorted(MODELS), default="quick")
    parser.add_argument(
        "--floor",
        nargs="?",
        const="bare",
        choices=("bare", "durable"),
        help="instead of Eonyx, bench/_floor_app.py (Flask, marshmallow, one httpx call to the "
        "model) under the same gunicorn workers: how far the stack alone gets; 'durable' also "
        "appends and fsyncs each turn's two messages, as the spec asks of every turn",
    )
    args = parser.parse_args()

    serve_args = ["--dev"] if args.dev else []
    for option in ("workers", "threads"):
        if getattr(args, option) is not None:
            serve_args += [f"--{option}", str(getattr(args, option))]
    turns_by_session: dict[str, int] = {}
    bare, turns = Phase(), Phase()
    with workspace(args.database_url, keep=args.keep) as ws, model_process(args.model) as model:
        base_url, model_pid = model
        database = Database(ws.database_url)
        _principal, token = bench_account(SimpleNamespace(db=database))
        database.dispose()
        env = {
            "DATA_DIR": str(ws.data_dir),
            "DATABASE_URL": ws.database_url,
            "HOME": str(ws.root),
            "EONYX_LLM_BASE_URL": base_url,
            "EONYX_LLM_MODEL": "quick-model",
        }
        print_header("bench_concurrency", ws, "embedded Redis, " + f"model: {args.model}")
        durable = ws.root / "floor-sessions" if args.floor == "durable" else None
        if durable:
            durable.mkdir()
        if args.floor:
            workers, threads = args.workers or HTTP_WORKERS, args.threads or HTTP_THREADS
            serving = floor_server(workers, threads, base_url, ws.root / "floor.log", durable)
        else:
            serving = eonyx_serve(env, log=ws.root / "serve.log", args=serve_args)
        with serving as server:
            http = "werkzeug (--dev)" if args.dev else "gunicorn"
            what = f"the floor app ({args.floor})" if args.floor else http
            print(f"   {what}: {' '.join(server.command[1:])}")
            print(f"   {args.clients} clients, {args.seconds:g} s each, {os.cpu_count()} cpu")

            def measure() -> dict[str, float]:
                spent = dict.fromkeys(SIDES, 0.0)
                for command, cpu in cpu_by_process(server.pid).values():
                    spent[server_side(command)] += cpu
                spent["model"] = sum(cpu for _, cpu in cpu_by_process(model_pid).values())
                spent["clients"] = time.process_time()  # this process: the client threads
                return spent

            for _ in range(args.rounds):
                run_phase(bare, args.clients, args.seconds, healthz_client(server.url), measure)
                if args.floor:
                    make = floor_turn_client(server.url, turns_by_session if durable else None)
                else:
                    make = turn_client(server.url, token, turns_by_session)
                run_phase(turns, args.clients, args.seconds, make, measure)
        counts = count_messages(durable, "*.jsonl") if durable else count_messages(ws.data_dir)
    return report(args, bare, turns, turns_by_session, counts)


def report(
    args: Any, bare: Phase, turns: Phase, by_session: dict[str, int], counts: dict[str, int]
) -> int:
    seconds = args.seconds * args.rounds
    rate = {name: phase.tally.done / seconds for name, phase in (("bare", bare), ("turns", turns))}
    ratio = rate["bare"] / rate["turns"] if rate["turns"] else float("inf")
    lost = sum(max(0, 2 * n - counts.get(s, 0)) for s, n in by_session.items())
    extra = sum(max(0, counts.get(s, 0) - 2 * n) for s, n in by_session.items())
    rows = []
    for name, phase in (("GET /healthz", bare), ("POST turn", turns)):
        tally = phase.tally
        lat = tally.latencies or [0.0]
        per = 1000 / max(tally.done, 1)
        rows.append(
            [
                name,
                str(tally.done),
                f"{tally.done / seconds:.1f}",
                f"{median(lat) * 1000:.1f}",
                f"{percentile(lat, 99) * 1000:.1f}",
                str(len(tally.errors)),
                *(f"{phase.cpu[side] * per:.2f}" for side in SIDES),
            ]
        )
    cpu_headers = [f"{side} CPU" for side in SIDES]
    print_table(["endpoint", "done", "per s", "p50 ms", "p99 ms", "errors", *cpu_headers], rows)
    print(f"   ratio healthz/turns: {ratio:.2f}x")
    per_turn, per_bare = (
        sum(phase.cpu.values()) * 1000 / max(phase.tally.done, 1) for phase in (turns, bare)
    )
    if per_bare:
        print(
            f"   CPU per request, every side together: {per_turn:.2f} ms a turn, "
            f"{per_bare:.2f} ms a /healthz; {per_turn / per_bare:.2f}x, the ratio to expect "
            "when both phases use the machine up"
        )
    print(
        "   CPU ms per request answered, from /proc: `eonyx serve` and its children (HTTP: the"
        " gunicorn processes; worker: the background worker, whose jobs the turns send;"
        " Redis: the embedded one), the model's process, and this script's client threads."
    )
    print(
        f"   session files: {len(by_session)} sessions, {sum(counts.values())} messages, "
        f"{lost} lost, {extra} unaccounted for (a turn cut off by the end of the run)"
    )
    for error in sorted(set(bare.tally.errors + turns.tally.errors))[:5]:
        print(f"   error: {error}")
    return verdict(
        [
            (f"turns/s at least 1/{TARGET_RATIO:g} of /healthz req/s", ratio <= TARGET_RATIO),
            ("zero errors", not bare.tally.errors and not turns.tally.errors),
            ("zero lost messages", lost == 0),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
