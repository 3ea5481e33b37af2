"""bench_turn's breakdown: the app in this process, each step of a turn timed and its database
and Redis round trips counted (see _turn_steps), at every length of the run."""

from __future__ import annotations

import cProfile
import io
import pstats
import threading
import time
from collections.abc import Iterable
from contextlib import redirect_stdout
from statistics import fmean
from typing import Any

import httpx
from _common import Workspace, bench_account, median, ms, print_table
from _serve import BENCH_SETTINGS
from _turn_driver import Driver, Model, prepare_sessions, run_rounds
from _turn_steps import COUNTS, STEPS, Recorder, breakdown, instrument
from werkzeug.serving import WSGIRequestHandler, make_server

from api.app import create_app
from api.context import runtime_of
from shared.core.settings import load_settings
from shared.infra.embedded_redis import EmbeddedRedis
from shared.sessions import service as session_service
from workers.queue import celery_jobs

PROFILE_TURNS = 100


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


def run_breakdown(
    ws: Workspace,
    env: dict[str, str],
    fake: Any,
    model: Model,
    histories: dict[int, list[dict[str, Any]]],
    turns: int,
    every: int,
    profile: bool,
    cpu: bool = False,
) -> str:
    """Run `turns` timed turns per length in this process; the report as text. With `cpu`,
    each step is the serving thread's CPU time (thread_time), not wall time."""
    embedded = None
    if "REDIS_URL" not in env:
        embedded = EmbeddedRedis(ws.data_dir)
        env = env | {"REDIS_URL": embedded.start()}
    settings = load_settings(BENCH_SETTINGS | env)
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt = runtime_of(app)
    rec = Recorder(time.thread_time_ns if cpu else time.perf_counter_ns)
    app.wsgi_app = rec.wsgi(app.wsgi_app)  # type: ignore[method-assign]
    instrument(rec, rt)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    out = io.StringIO()
    try:
        principal, token = bench_account(rt)
        with httpx.Client(timeout=120) as client:
            client.headers["Authorization"] = f"Bearer {token}"
            warmup = max(5, turns // 10)
            extra = -(-PROFILE_TURNS // every) + 1 if profile else 0
            rotations = prepare_sessions(
                rt.store,
                principal.user_id,
                lambda: session_service.create_session(rt, principal, rt.memory).id,
                histories,
                -(-(warmup + turns + 1) // every) + extra,
                every,
            )
            driver = Driver(client, f"http://127.0.0.1:{server.server_port}", fake, model)
            run_rounds(driver, rotations, warmup + turns, warmup, rec=rec, bare=False)
            with redirect_stdout(out):
                print_breakdown(rec, list(histories), type(rt.locks).__name__, settings, cpu)
                if profile:
                    longest = max(histories)
                    print()
                    print(profile_turns(app, driver, rotations[longest], longest))
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
        rt.close()
        if embedded is not None:
            embedded.stop()
    return out.getvalue().rstrip()


def print_breakdown(
    rec: Recorder, lengths: list[int], locks: str, settings: Any, cpu: bool = False
) -> None:
    parts = {length: breakdown(rec.samples, f"turn_{length}") for length in lengths}
    steps = [
        ("app", "app WSGI total (in-process)"),
        *STEPS,
        ("rest_run_turn", "  rest of run_turn (project, meta, tool specs...)"),
        ("rest_app", "rest: Flask routing, marshmallow load/dump, JSON"),
    ]
    rows = []
    for kind, title in steps:
        cells = [parts[length].get(kind) for length in lengths]
        if any(cells):
            rows.append([title, *(ms(median(cell)) if cell else "" for cell in cells)])
    backend = settings.database_url.split(":", 1)[0]
    print(f"-- breakdown: the app in this process ({backend}, turn lock {locks})")
    print_table(
        [
            f"in-app steps of a turn, p50 {'CPU ' if cpu else ''}ms",
            *(f"{n:,} msgs" for n in lengths),
        ],
        rows,
    )
    rows = []
    for kind, title in COUNTS:
        cells = [rec.samples.get(f"{kind}:turn_{length}") for length in lengths]
        rows.append([title, *(f"{fmean(cell):.1f}" if cell else "-" for cell in cells)])
    print()
    print_table(["round trips per turn (mean)", *(f"{n:,} msgs" for n in lengths)], rows)
    print(
        "   Medians of each step on their own; they need not add up to the total's median."
        " On PostgreSQL a transaction costs BEGIN and COMMIT round trips besides its statements."
    )


def profile_turns(app: Any, driver: Driver, rotation: Any, length: int) -> str:
    """cProfile of turns at one length, measured in the app's request threads."""
    profiler = cProfile.Profile()
    inner = app.wsgi_app

    def profiled(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        profiler.enable()
        try:
            return inner(environ, start_response)
        finally:
            profiler.disable()

    rotation.turns = -(-rotation.turns // rotation.every) * rotation.every  # fresh sessions
    for _ in range(PROFILE_TURNS):
        session_id, first = rotation.next()
        if first:
            driver.turn(length, session_id)  # the cold first turn is not profiled
        app.wsgi_app = profiled
        driver.turn(length, session_id)
        app.wsgi_app = inner
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative")
    out.write(f"-- cProfile of {PROFILE_TURNS} turns at {length:,} messages (app threads)\n")
    stats.print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
    return out.getvalue()
