"""Many open connections against `eonyx serve` on gunicorn's gevent worker: events sockets, users
chatting with a slow model, and clients that send their request bodies a byte at a time.

    .venv/bin/python bench/bench_connections.py [--sockets 1000,5000,10000] [--users 50,200,1000]
        [--seconds 20] [--slow 500] [--hold 45] [--phases sockets,chat,slow] [--quick]
        [--compression deflate|none] [--workers N] [--connections N] [--database-url URL] [--keep]

Starts `eonyx serve` with its shipped settings (2 gunicorn gevent workers, 10,000 connections
each; --workers and --connections pass other values on), its embedded Redis and a SQLite file
(unless --database-url) on a temporary DATA_DIR, rate limits off (bench/_serve.py), the events
socket caps at their defaults (EVENTS_SOCKETS_PER_USER 32, EVENTS_SOCKETS_PER_TOKEN 16). Its
users and their API keys are written to the database before it starts (one user per 32
sockets, one key per 16); the model is bench/_quick_model.py in a process of its own, twice:
one answering at once (the built-in offering), one after MODEL_SECONDS (an offering of its own,
`slow`). The client is this script's asyncio loop (`websockets`, httpx.AsyncClient), on the same
machine. The load average is printed at the start and the end of each phase.

1. sockets: for each N in --sockets, N events WebSockets (/api/v1/events?token=...) opened at
   once (at most --opening handshakes in flight), offering permessage-deflate as browsers do
   (--compression none offers nothing). A socket counts once the server said `ready`; error
   messages instead (too_many_sockets...) and failed handshakes are counted apart, as are the
   sockets the server closes while they are held. With all of them open: a user who has not
   signed in yet logs in, GETs /api/v1/sessions 50 times (p50, p95), creates a session and
   completes a turn; then --pushes times, one event per socket-owning user is published to
   Redis as the server's own code does (shared.infra.event_bus.publish, on the embedded Redis
   that the run file names), and the time from the publish until each socket received it is
   taken (median and last socket; the client's own loop reads 10,000 messages in that time
   too). RSS: VmRSS summed over the gunicorn processes (arbiter and workers), before opening
   and with N open, and their difference per 1,000 sockets. The sockets are closed between
   sizes, and the next size waits (up to 10 s) until the server released their places in the
   caps.
2. chat: for each U in --users, U users at once, each with a client (one keep-alive
   connection) and a session of its own, sending turns back to back for --seconds (a turn
   started before the end is waited for and counted), with the chat role on the model that
   answers after MODEL_SECONDS; the background jobs' roles (titles, memory, summaries) on the
   quick model, so the worker keeps up. Turns/s is turns over the time from the start to the
   last answer; the ideal is U / MODEL_SECONDS.
3. slow: /healthz p50 over 50 requests and a signed-in turn's p50 over 10 turns (the quick
   model; a new session for each 10), alone; then --slow raw TCP connections each send a login
   request's headers announcing a 100-byte body and then one body byte every 2 s, held for
   --hold seconds (longer than REQUEST_BODY_SECONDS, 30 s, so the server's 408s and the
   reopenings fall inside it): a connection the server closes is counted (and its 408) and
   opened again. Meanwhile the same measurements run again, round after round, and their p50s
   are compared with the ones alone.

Targets: 10,000 sockets ready with /api/v1/sessions p95 under 250 ms and the last socket's
event within 2 s (every size run is held to it); at 200 users (and every smaller size run)
turns/s at least 80% of the ideal, p50 under 2.5 s, no errors; with the slow clients held,
both p50s within 2x of the ones alone. `--quick` is a smoke run (sockets 200, users 20, slow
50, seconds 5, hold 35). The full default run takes about 5 minutes on 2 cores.
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import os
import re
import resource
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from _common import (
    Workspace,
    base_parser,
    median,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)
from _serve import eonyx_serve, serve_env
from bench_concurrency import cpu_by_process, model_process
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from cli import runfile
from shared.accounts import people
from shared.core import registry
from shared.core.metrics import QUEUES
from shared.core.settings import load_settings
from shared.db.database import Database
from shared.infra import event_bus
from shared.llm.models import ROLES

PASSWORD = "correct horse battery"
MODEL_SECONDS = 2.0
OPEN_TIMEOUT = 120.0  # a handshake queued behind thousands of others
EVENT_TIMEOUT = 30.0
HTTP_TIMEOUT = 120.0
LIST_REQUESTS = 50
HEALTHZ_REQUESTS = 50
TURNS_PER_ROUND = 10
SLOW_HEAD = (
    b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n"
)
DRIP_SECONDS = 2.0
SESSION_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")

TARGET_LIST_P95_MS = 250.0
TARGET_EVENT_SECONDS = 2.0
TARGET_USERS = 200
TARGET_SHARE = 0.8
TARGET_CHAT_P50 = 2.5
TARGET_SLOW_RATIO = 2.0
QUICK = {"sockets": "200", "users": "20", "slow": 50, "seconds": 5.0, "hold": 35.0}


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.replace("_", "").split(",") if part.strip()]


def load_average(moment: str) -> None:
    one, five, fifteen = os.getloadavg()
    print(f"   load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min): {moment}")


def raise_open_files_limit() -> int:
    """Every socket is a file descriptor: the soft limit up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# --- accounts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    user_id: str
    token: str


@dataclass
class Accounts:
    keys: list[Key]  # the first `keys_per_user` are the first user's, and so on
    per_key: int  # sockets opened with each key
    fresh: list[str]  # usernames that have not logged in yet
    admin: str  # an administrator's API key


def make_accounts(ws: Workspace, sockets: int, clients: int, fresh: int) -> Accounts:
    """Users with API keys enough for `sockets` sockets within the server's caps (as the
    server reads them from the same environment), and for `clients` chatting users (16 to a
    key); `fresh` more users without a token; an admin."""
    settings = load_settings(
        serve_env({"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url})
    )
    per_key = min(settings.events_sockets_per_token, settings.events_sockets_per_user)
    keys_per_user = max(1, settings.events_sockets_per_user // per_key)
    key_count = max(math.ceil(sockets / per_key), math.ceil(clients / 16), 1)
    database = Database(ws.database_url)
    keys: list[Key] = []
    try:
        with database.session() as db:
            for n in range(math.ceil(key_count / keys_per_user)):
                user = people.create_user(db, f"sockets{n}", PASSWORD)
                who = people.Principal(user.id, user.username, False, "web", "")
                for k in range(keys_per_user):
                    _row, token = people.create_api_key(db, who, f"bench {k}")
                    keys.append(Key(user.id, token))
            names = [people.create_user(db, f"fresh{n}", PASSWORD).username for n in range(fresh)]
            admin = people.create_user(db, "benchadmin", PASSWORD, is_admin=True)
            who = people.Principal(admin.id, admin.username, True, "web", "")
            _row, admin_token = people.create_api_key(db, who, "bench admin")
    finally:
        database.dispose()
    return Accounts(keys, per_key, names, admin_token)


# --- the server's processes and Redis ------------------------------------------------------


def gunicorn_rss(serve_pid: int) -> tuple[float, int]:
    """VmRSS of the gunicorn processes under `eonyx serve`, in MiB, and how many they are."""
    total_kib, count = 0, 0
    for pid, (command, _cpu) in cpu_by_process(serve_pid).items():
        if "gunicorn" not in command:
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
                count += 1
    return total_kib / 1024, count


def served_redis(data_dir: Path) -> redis.Redis:
    """A client of the Redis `eonyx serve` runs (its run file names it, once written)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        server = runfile.read_any(runfile.run_file(data_dir))
        if server is not None and server.environment.get("REDIS_URL"):
            return redis.Redis.from_url(server.environment["REDIS_URL"])
        time.sleep(0.1)
    raise SystemExit("eonyx serve wrote no run file with its REDIS_URL in 30 s")


def wait_released(client: redis.Redis, user_ids: set[str], timeout: float = 10) -> int:
    """Until the server released every socket of these users from the caps; how many are
    still counted when `timeout` ran out (a release Redis refused is made at the process's
    next claim, see shared/infra/socket_quota.py)."""
    keys = [registry.SOCKETS_BY_USER + user_id for user_id in user_ids]
    deadline = time.monotonic() + timeout
    while True:
        with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.zcard(key)
            left = sum(pipe.execute())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def wait_for_jobs(client: redis.Redis, timeout: float = 180) -> tuple[float, int]:
    """Until the worker took every queued job: (seconds waited, jobs still queued)."""
    started = time.monotonic()
    while True:
        queued = sum(client.llen(queue) for queue in QUEUES)
        waited = time.monotonic() - started
        if not queued or waited > timeout:
            return waited, queued
        time.sleep(0.2)


def describe(exc: BaseException) -> str:
    if isinstance(exc, InvalidStatus):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, OSError) and exc.errno:
        return f"{type(exc).__name__} {errno.errorcode.get(exc.errno, exc.errno)}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} {' '.join(exc.response.text.split())[:120]}"
    return type(exc).__name__


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def timed(call: Callable[[], Awaitable[httpx.Response]]) -> float:
    """Seconds `call` took; raises for an answer that is not 2xx."""
    started = time.perf_counter()
    response = await call()
    response.raise_for_status()
    return time.perf_counter() - started


# --- 1. events sockets ---------------------------------------------------------------------


@dataclass
class Fleet:
    """One size's events sockets and what they heard."""

    sockets: list[ClientConnection] = field(default_factory=list)
    listeners: list[asyncio.Task[None]] = field(default_factory=list)
    owners: set[str] = field(default_factory=set)
    refused: Counter[str] = field(default_factory=Counter)  # an error message, not `ready`
    failed: Counter[str] = field(default_factory=Counter)  # no socket: handshake, timeout
    lost: Counter[str] = field(default_factory=Counter)  # closed by the server while held
    open: int = 0  # ready and not lost
    push: int = 0
    heard: list[float] = field(default_factory=list)
    everyone: asyncio.Event = field(default_factory=asyncio.Event)
    closing: bool = False


async def listen(ws: ClientConnection, fleet: Fleet) -> None:
    said = ""
    try:
        async for raw in ws:
            event = json.loads(raw)
            if event.get("type") == "bench.ping" and event.get("n") == fleet.push:
                fleet.heard.append(time.perf_counter())
                if len(fleet.heard) >= fleet.open:
                    fleet.everyone.set()
            elif event.get("type") == "error":
                said = event.get("error", {}).get("code", "error")
    except ConnectionClosed:
        pass
    if not fleet.closing:
        fleet.lost[said or f"closed {ws.close_code}"] += 1
        fleet.open -= 1
        if len(fleet.heard) >= fleet.open:
            fleet.everyone.set()


async def open_fleet(url: str, found: Accounts, count: int, opening: int, deflate: bool) -> Fleet:
    fleet = Fleet()
    gate = asyncio.Semaphore(opening)
    base = url.replace("http://", "ws://", 1) + "/api/v1/events?token="

    async def one(i: int) -> None:
        key = found.keys[i // found.per_key]
        async with gate:
            try:
                ws = await connect(
                    base + key.token,
                    open_timeout=OPEN_TIMEOUT,
                    ping_interval=None,  # the server pings every 25 s; pongs are automatic
                    close_timeout=10,
                    max_queue=4,
                    compression="deflate" if deflate else None,
                )
            except Exception as exc:  # noqa: BLE001 - why it failed is the figure
                fleet.failed[describe(exc)] += 1
                return
            try:
                first = json.loads(await asyncio.wait_for(ws.recv(), OPEN_TIMEOUT))
            except (TimeoutError, ConnectionClosed, ValueError) as exc:
                fleet.failed[f"no ready: {describe(exc)}"] += 1
                await ws.close()
                return
        if first.get("type") == "ready":
            fleet.sockets.append(ws)
            fleet.open += 1
            fleet.owners.add(key.user_id)
            fleet.listeners.append(asyncio.create_task(listen(ws, fleet)))
        else:
            fleet.refused[first.get("error", {}).get("code") or json.dumps(first)[:80]] += 1
            await ws.close()

    await asyncio.gather(*(one(i) for i in range(count)))
    return fleet


async def push(fleet: Fleet, client: redis.Redis, n: int) -> tuple[list[float], int]:
    """One event per socket-owning user: seconds from the publish to each socket's receipt,
    and how many sockets were open to hear it."""
    fleet.push, fleet.heard, fleet.everyone = n, [], asyncio.Event()
    expected = fleet.open

    def publish_all() -> None:
        for user_id in fleet.owners:
            event_bus.publish(client, user_id, {"type": "bench.ping", "n": n})

    started = time.perf_counter()
    await asyncio.to_thread(publish_all)
    with suppress(TimeoutError):  # a socket that never hears it shows in `heard`
        await asyncio.wait_for(fleet.everyone.wait(), EVENT_TIMEOUT)
    return [at - started for at in fleet.heard], expected


async def close_fleet(fleet: Fleet) -> None:
    fleet.closing = True
    await asyncio.gather(*(ws.close() for ws in fleet.sockets), return_exceptions=True)
    await asyncio.gather(*fleet.listeners, return_exceptions=True)


@dataclass
class SocketsRow:
    size: int
    ready: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    open_seconds: float = 0.0
    rss_before: float = 0.0
    rss_open: float = 0.0
    login: float | None = None
    lists: list[float] = field(default_factory=list)
    turn: float | None = None
    problems: list[str] = field(default_factory=list)
    pushes: list[list[float]] = field(default_factory=list)  # each socket's delay, per push
    open_at_push: list[int] = field(default_factory=list)
    left_counted: int = 0

    @property
    def last_event(self) -> float:
        """The slowest push's last socket (inf when a ready socket never heard one)."""
        if not self.pushes:
            return math.inf
        return max(max(p) if len(p) == self.ready and p else math.inf for p in self.pushes)


async def signed_in_probes(url: str, username: str, row: SocketsRow) -> None:
    """(a) a login, (b) the session list 50 times, (c) a new session and a turn."""
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        try:
            started = time.perf_counter()
            answer = await http.post(
                "/api/v1/auth/login", json={"username": username, "password": PASSWORD}
            )
            answer.raise_for_status()
            row.login = time.perf_counter() - started
            auth = bearer(answer.json()["token"])
            await http.get("/api/v1/sessions", headers=auth)  # the token's first check
            for _ in range(LIST_REQUESTS):
                row.lists.append(await timed(lambda: http.get("/api/v1/sessions", headers=auth)))
            started = time.perf_counter()
            created = await http.post("/api/v1/sessions", json={}, headers=auth)
            created.raise_for_status()
            path = f"/api/v1/sessions/{created.json()['id']}/turns"
            answer = await http.post(path, json={"content": "hi"}, headers=auth)
            answer.raise_for_status()
            row.turn = time.perf_counter() - started
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            row.problems.append(f"signed-in requests: {describe(exc)}")


async def sockets_size(
    args: Any, size: int, url: str, serve_pid: int, found: Accounts, client: redis.Redis
) -> SocketsRow:
    """Open `size` sockets, probe and push with them open, close them."""
    row = SocketsRow(size)
    username = found.fresh.pop(0)
    row.rss_before = gunicorn_rss(serve_pid)[0]
    started = time.perf_counter()
    fleet = await open_fleet(url, found, row.size, args.opening, args.compression == "deflate")
    row.open_seconds = time.perf_counter() - started
    row.ready, row.refused, row.failed = len(fleet.sockets), fleet.refused, fleet.failed
    await asyncio.sleep(1)  # the last handshakes' garbage settles
    row.rss_open = gunicorn_rss(serve_pid)[0]
    await signed_in_probes(url, username, row)
    for n in range(args.pushes if fleet.sockets else 0):
        delays, expected = await push(fleet, client, n + 1)
        row.pushes.append(delays)
        row.open_at_push.append(expected)
    row.lost = Counter(fleet.lost)
    await close_fleet(fleet)
    row.left_counted = await asyncio.to_thread(wait_released, client, fleet.owners)
    return row


def report_sockets(rows: list[SocketsRow], processes: int) -> list[tuple[str, bool]]:
    print_table(
        ["sockets", "ready", "refused", "failed", "lost", "open s", "RSS before MiB"]
        + ["RSS open MiB", "MiB per 1,000"],
        [
            [
                f"{row.size:,}",
                f"{row.ready:,}",
                str(sum(row.refused.values())),
                str(sum(row.failed.values())),
                str(sum(row.lost.values())),
                f"{row.open_seconds:.1f}",
                f"{row.rss_before:.0f}",
                f"{row.rss_open:.0f}",
                f"{(row.rss_open - row.rss_before) * 1000 / max(row.ready, 1):.1f}",
            ]
            for row in rows
        ],
    )
    print()
    print_table(
        ["sockets", "login ms", "list p50 ms", "list p95 ms", "session+turn ms"]
        + ["event median ms", "event last ms (each push)", "heard"],
        [
            [
                f"{row.size:,}",
                f"{row.login * 1000:.0f}" if row.login is not None else "FAILED",
                f"{median(row.lists) * 1000:.1f}" if row.lists else "-",
                f"{percentile(row.lists, 95) * 1000:.1f}" if row.lists else "-",
                f"{row.turn * 1000:.0f}" if row.turn is not None else "FAILED",
                f"{median([median(p) for p in row.pushes if p]) * 1000:.0f}"
                if any(row.pushes)
                else "-",
                ", ".join(f"{max(p) * 1000:.0f}" if p else "-" for p in row.pushes),
                ", ".join(
                    f"{len(p)}/{e}" for p, e in zip(row.pushes, row.open_at_push, strict=True)
                ),
            ]
            for row in rows
        ],
    )
    print(
        f"   RSS: VmRSS summed over the {processes} gunicorn processes (arbiter and workers);\n"
        "   per 1,000: (open - before) / ready sockets. heard: sockets that got each push, of\n"
        "   those open when it was published. event: publish to receipt, the client's loop too."
    )
    checks = []
    for row in rows:
        for what, counts in (("refused", row.refused), ("failed", row.failed)):
            for reason, times in counts.most_common(5):
                print(f"   {row.size:,} sockets: {times} {what}: {reason}")
        for reason, times in row.lost.most_common(5):
            print(f"   {row.size:,} sockets: {times} closed by the server while held: {reason}")
        for problem in row.problems:
            print(f"   {row.size:,} sockets: {problem}")
        if row.left_counted:
            print(
                f"   {row.size:,} sockets: {row.left_counted} still counted in the caps 10 s "
                "after closing"
            )
        p95 = percentile(row.lists, 95) * 1000 if row.lists else math.inf
        checks += [
            (
                f"{row.size:,} sockets: all ready, none closed by the server, login and "
                "turn answered",
                row.ready == row.size
                and not row.lost
                and row.login is not None
                and row.turn is not None,
            ),
            (
                f"{row.size:,} sockets: list p95 < {TARGET_LIST_P95_MS:g} ms",
                p95 < TARGET_LIST_P95_MS,
            ),
            (
                f"{row.size:,} sockets: last socket's event within {TARGET_EVENT_SECONDS:g} s",
                row.last_event <= TARGET_EVENT_SECONDS,
            ),
        ]
    return checks


# --- 2. chatting users ---------------------------------------------------------------------


@dataclass
class ChatRow:
    users: int
    done: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.done / self.seconds if self.seconds else 0.0

    @property
    def ideal(self) -> float:
        return self.users / MODEL_SECONDS


async def chat_size(url: str, keys: list[Key], users: int, seconds: float) -> ChatRow:
    """`users` users, each with a client of its own (one keep-alive connection, as each
    person's browser has): httpx's shared async pool spends CPU per request in proportion to
    its connections (about 18 ms a request at 200 here), which would measure the client."""
    row = ChatRow(users)
    clients = [
        httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT, headers=bearer(key.token))
        for key in (keys[i % len(keys)] for i in range(users))
    ]

    async def new_session(http: httpx.AsyncClient) -> str | None:
        try:
            created = await http.post("/api/v1/sessions", json={})
            created.raise_for_status()
        except httpx.HTTPError as exc:
            row.errors[f"new session: {describe(exc)}"] += 1
            return None
        return str(created.json()["id"])

    try:
        sessions = await asyncio.gather(*(new_session(http) for http in clients))
        loop = asyncio.get_running_loop()
        started = loop.time()
        last = started

        async def chat(http: httpx.AsyncClient, session_id: str | None) -> None:
            nonlocal last
            if session_id is None:
                return
            path = f"/api/v1/sessions/{session_id}/turns"
            while loop.time() - started < seconds:
                try:
                    took = await timed(lambda: http.post(path, json={"content": "hi"}))
                except httpx.HTTPError as exc:
                    row.errors[describe(exc)] += 1
                    await asyncio.sleep(0.1)  # no tight loop on a server that refuses at once
                    continue
                row.done += 1
                row.latencies.append(took)
                last = max(last, loop.time())

        await asyncio.gather(*(chat(http, s) for http, s in zip(clients, sessions, strict=True)))
        row.seconds = last - started
    finally:
        await asyncio.gather(*(http.aclose() for http in clients))
    return row


async def set_roles(url: str, admin: str, chat: str | None, others: str | None) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        for role in ROLES:
            body = {"offering_id": chat if role == "chat" else others}
            answer = await http.put(
                f"/api/v1/models/roles/{role}", json=body, headers=bearer(admin)
            )
            answer.raise_for_status()
    await asyncio.sleep(1)  # the other worker hears of the change over Redis


async def add_offering(url: str, admin: str, name: str, base_url: str) -> None:
    body = {"id": name, "base_url": base_url, "model": "quick-model"}
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        answer = await http.post("/api/v1/models/offerings", json=body, headers=bearer(admin))
        answer.raise_for_status()


def report_chat(rows: list[ChatRow]) -> list[tuple[str, bool]]:
    print_table(
        ["users", "turns", "turns/s", "ideal/s", "of ideal", "p50 s", "p95 s", "errors"],
        [
            [
                f"{row.users:,}",
                str(row.done),
                f"{row.rate:.1f}",
                f"{row.ideal:.1f}",
                f"{row.rate / row.ideal:.0%}",
                f"{median(row.latencies):.2f}" if row.latencies else "-",
                f"{percentile(row.latencies, 95):.2f}" if row.latencies else "-",
                str(sum(row.errors.values())),
            ]
            for row in rows
        ],
    )
    print(
        f"   ideal: users / {MODEL_SECONDS:g} s (every turn as long as the model's answer); "
        "turns/s over the time from the start to the last answer"
    )
    checks = []
    for row in rows:
        for error, times in row.errors.most_common(5):
            print(f"   {row.users:,} users: {times} x {error}")
        if row.users > TARGET_USERS:
            continue
        p50 = median(row.latencies) if row.latencies else math.inf
        checks += [
            (
                f"{row.users:,} users: turns/s at least {TARGET_SHARE:.0%} of the ideal",
                row.rate >= TARGET_SHARE * row.ideal,
            ),
            (f"{row.users:,} users: turn p50 < {TARGET_CHAT_P50:g} s", p50 < TARGET_CHAT_P50),
            (f"{row.users:,} users: no errors", not row.errors),
        ]
    return checks


# --- 3. slow bodies ------------------------------------------------------------------------


@dataclass
class Slow:
    opened: int = 0
    held: int = 0
    closes: int = 0
    timeouts: int = 0  # 408 answers
    answers: Counter[str] = field(default_factory=Counter)  # any other first line
    failed: Counter[str] = field(default_factory=Counter)  # connections that did not open
    held_for: list[float] = field(default_factory=list)  # seconds until a 408


async def drip(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stop: asyncio.Event
) -> bytes | None:
    """Send a body byte every DRIP_SECONDS until the server says something or closes (what
    it said, b"" for nothing) or `stop` (None)."""
    try:
        writer.write(SLOW_HEAD)
        await writer.drain()
        while True:
            try:
                data = await asyncio.wait_for(reader.read(4096), DRIP_SECONDS)
            except TimeoutError:
                if stop.is_set():
                    return None
                writer.write(b" ")
                await writer.drain()
                continue
            if data:
                with_rest = data
                try:
                    while more := await asyncio.wait_for(reader.read(4096), 5):
                        with_rest += more
                except (TimeoutError, ConnectionError):
                    pass
                return with_rest
            return b""
    except ConnectionError:
        return b""


async def slow_client(host: str, port: int, stop: asyncio.Event, slow: Slow) -> None:
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            slow.failed[describe(exc)] += 1
            await asyncio.sleep(1)
            continue
        slow.opened += 1
        slow.held += 1
        opened = time.monotonic()
        try:
            said = await drip(reader, writer, stop)
        finally:
            slow.held -= 1
            writer.close()
        if said is None:
            return
        slow.closes += 1
        first_line = said.split(b"\r\n", 1)[0].decode("latin-1")
        if first_line.startswith("HTTP/1.1 408"):
            slow.timeouts += 1
            slow.held_for.append(time.monotonic() - opened)
        elif said:
            slow.answers[first_line[:60]] += 1


@dataclass
class Latencies:
    healthz: list[float] = field(default_factory=list)
    turns: list[float] = field(default_factory=list)
    problems: Counter[str] = field(default_factory=Counter)


async def measure_round(http: httpx.AsyncClient, token: str, into: Latencies) -> None:
    """50 GET /healthz and 10 turns on a new session, one after the other."""
    auth = bearer(token)
    try:
        for _ in range(HEALTHZ_REQUESTS):
            into.healthz.append(await timed(lambda: http.get("/healthz")))
        created = await http.post("/api/v1/sessions", json={}, headers=auth)
        created.raise_for_status()
        path = f"/api/v1/sessions/{created.json()['id']}/turns"
        for _ in range(TURNS_PER_ROUND):
            into.turns.append(
                await timed(lambda: http.post(path, json={"content": "hi"}, headers=auth))
            )
    except httpx.HTTPError as exc:
        into.problems[describe(exc)] += 1


async def slow_phase(
    url: str, token: str, count: int, hold: float
) -> tuple[Latencies, Latencies, Slow, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    alone, held, slow = Latencies(), Latencies(), Slow()
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        await measure_round(http, token, Latencies())  # warm-up
        await measure_round(http, token, alone)
        stop = asyncio.Event()
        clients = [
            asyncio.create_task(slow_client(host, int(port), stop, slow)) for _ in range(count)
        ]
        started = time.monotonic()
        while slow.opened < count and time.monotonic() - started < 30:
            await asyncio.sleep(0.1)
        rounds = 0
        while time.monotonic() - started < hold:
            await measure_round(http, token, held)
            rounds += 1
        stop.set()
        await asyncio.gather(*clients)
    return alone, held, slow, rounds


def report_slow(
    alone: Latencies, held: Latencies, slow: Slow, rounds: int, count: int, hold: float
) -> list[tuple[str, bool]]:
    rows, checks = [], []
    for name, a, h in (
        ("GET /healthz", alone.healthz, held.healthz),
        ("turn (quick model)", alone.turns, held.turns),
    ):
        p50a = median(a) * 1000 if a else math.inf
        p50h = median(h) * 1000 if h else math.inf
        ratio = p50h / p50a if a and h else math.inf
        rows.append([name, str(len(a)), f"{p50a:.1f}", str(len(h)), f"{p50h:.1f}", f"{ratio:.2f}x"])
        checks.append(
            (
                f"{name} p50 with {count:,} slow clients within {TARGET_SLOW_RATIO:g}x of alone",
                ratio <= TARGET_SLOW_RATIO,
            )
        )
    print_table(["", "alone n", "alone p50 ms", "held n", "held p50 ms", "held / alone"], rows)
    until = f", {median(slow.held_for):.1f} s median until the 408" if slow.held_for else ""
    print(
        f"   slow clients: {count:,} held for {hold:g} s ({rounds} measuring rounds meanwhile): "
        f"{slow.opened:,} connections opened, {slow.closes:,} closed by the server, "
        f"{slow.timeouts:,} of them answered 408{until}"
    )
    for line, times in slow.answers.most_common(5):
        print(f"   slow clients: {times} answered {line!r}")
    for reason, times in slow.failed.most_common(5):
        print(f"   slow clients: {times} could not connect: {reason}")
    for what, latencies in (("alone", alone), ("held", held)):
        for problem, times in latencies.problems.most_common(5):
            print(f"   measuring {what}: {times} x {problem}")
    checks.append(("measuring requests all answered", not alone.problems and not held.problems))
    return checks


# --- main ----------------------------------------------------------------------------------


def server_log_summary(log: Path, keep: bool) -> None:
    """The server's warnings and errors, and why events sockets were closed, counted by
    message (its log is JSON lines, gunicorn's own too; a traceback on stderr is raw)."""
    lines = log.read_text(errors="replace").splitlines()
    seen: Counter[str] = Counter()
    for line in lines:
        if line.startswith("Traceback"):
            seen["a traceback on stderr"] += 1
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        level, message = record.get("level", ""), str(record.get("message", ""))
        if level in ("WARNING", "ERROR", "CRITICAL") or message.startswith("events socket"):
            error = (record.get("exc_info") or "").strip().splitlines()[-1:]
            text = f"{level} {record.get('logger')}: {SESSION_ID.sub('<id>', message)[:150]}"
            seen[text + (f" ({error[0][:150]})" if error else "")] += 1
    where = f" ({log})" if keep else " (--keep keeps it)"
    print(f"\n   server log: {len(lines):,} lines{where}; warnings, errors, sockets closed:")
    for text, times in seen.most_common(10):
        print(f"   {times:>6} x {text}")


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default="sockets,chat,slow", help="which, comma-separated")
    parser.add_argument("--sockets", default="1000,5000,10000", help="sizes, comma-separated")
    parser.add_argument("--opening", type=int, default=200, help="handshakes in flight at once")
    parser.add_argument("--pushes", type=int, default=3, help="events pushed per size")
    parser.add_argument(
        "--compression",
        choices=("deflate", "none"),
        default="deflate",
        help="what the client offers (browsers offer permessage-deflate)",
    )
    parser.add_argument("--users", default="50,200,1000", help="chatting users, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="per chatting size")
    parser.add_argument("--slow", type=int, default=500, help="slow-body connections")
    parser.add_argument("--hold", type=float, default=45.0, help="seconds they are held")
    parser.add_argument("--workers", type=int, default=None, help="eonyx serve --workers")
    parser.add_argument("--connections", type=int, default=None, help="eonyx serve --connections")
    parser.add_argument("--quick", action="store_true", help="a small smoke run: " + str(QUICK))
    args = parser.parse_args()
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    phases = {part.strip() for part in args.phases.split(",") if part.strip()}
    unknown = phases - {"sockets", "chat", "slow"}
    if unknown:
        parser.error(f"unknown phase {sorted(unknown)[0]!r}")
    socket_sizes = sizes(args.sockets) if "sockets" in phases else []
    user_sizes = sizes(args.users) if "chat" in phases else []
    serve_args = []
    for option in ("workers", "connections"):
        if getattr(args, option) is not None:
            serve_args += [f"--{option}", str(getattr(args, option))]
    files = raise_open_files_limit()

    checks: list[tuple[str, bool]] = []
    with workspace(args.database_url, keep=args.keep) as ws, ExitStack() as stack:
        started = time.perf_counter()
        found = make_accounts(
            ws,
            max(socket_sizes, default=0),
            max(user_sizes, default=0),
            len(socket_sizes),
        )
        made = time.perf_counter() - started
        os.environ["QUICK_MODEL_DELAY"] = "0"  # model_process's child reads it
        quick_url, _ = stack.enter_context(model_process("quick"))
        os.environ["QUICK_MODEL_DELAY"] = f"{MODEL_SECONDS:g}"
        slow_url, _ = stack.enter_context(model_process("quick"))
        del os.environ["QUICK_MODEL_DELAY"]
        env = {
            "DATA_DIR": str(ws.data_dir),
            "DATABASE_URL": ws.database_url,
            "HOME": str(ws.root),
            "EONYX_LLM_BASE_URL": quick_url,
            "EONYX_LLM_MODEL": "quick-model",
        }
        log = ws.root / "serve.log"
        served = stack.enter_context(eonyx_serve(env, log=log, args=serve_args))
        client = served_redis(ws.data_dir)
        rss, processes = gunicorn_rss(served.pid)
        print_header("bench_connections", ws, "embedded Redis")
        print(f"   {' '.join(served.command[1:])}")
        print(
            f"   {len(found.keys)} API keys of {len({k.user_id for k in found.keys})} users made "
            f"in {made:.1f} s ({found.per_key} sockets a key); open files limit {files:,}; "
            f"{processes} gunicorn processes, {rss:.0f} MiB"
        )

        if socket_sizes:
            print(f"\n-- 1. events sockets ({args.compression} offered by the client)")
            load_average("start")
            rows = []
            for size in socket_sizes:
                row = sockets_size(args, size, served.url, served.pid, found, client)
                rows.append(asyncio.run(row))
                load_average(f"{size:,} sockets closed")
            checks += report_sockets(rows, processes)
            load_average("end")

        if user_sizes:
            print(f"\n-- 2. users chatting at once, {args.seconds:g} s each")
            load_average("start")
            asyncio.run(add_offering(served.url, found.admin, "slow", slow_url))
            asyncio.run(add_offering(served.url, found.admin, "quick", quick_url))
            asyncio.run(set_roles(served.url, found.admin, "slow", "quick"))
            chat_rows = []
            for users in user_sizes:
                chat_rows.append(
                    asyncio.run(chat_size(served.url, found.keys, users, args.seconds))
                )
                load_average(f"{users:,} users done")
            asyncio.run(set_roles(served.url, found.admin, None, None))
            checks += report_chat(chat_rows)
            load_average("end")

        if "slow" in phases:
            waited, queued = wait_for_jobs(client)
            print(f"\n-- 3. {args.slow:,} slow-body connections")
            print(f"   waited {waited:.1f} s for the worker's queue to empty ({queued} left)")
            load_average("start")
            alone, held, slow, rounds = asyncio.run(
                slow_phase(served.url, found.keys[0].token, args.slow, args.hold)
            )
            checks += report_slow(alone, held, slow, rounds, args.slow, args.hold)
            load_average("end")
        client.close()
        stack.close()  # the server stops: its log is complete
        server_log_summary(log, args.keep)
    return verdict(checks)


if __name__ == "__main__":
    sys.exit(main())
