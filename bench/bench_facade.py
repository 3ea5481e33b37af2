"""The OpenAI-compatible facade against a direct turn, over real HTTP on loopback.

    .venv/bin/python bench/bench_facade.py [--turns 300] [--database-url URL] [--redis-url URL]

The app (api.create_app) is served by werkzeug's threaded server from this process; the model
is tests/fake_llm.py (echoes at once). One httpx.Client sends, interleaved and in rotating
order, per round:

- direct: POST /api/v1/sessions/<id>/turns {"content"} (the session made beforehand, untimed);
- header: POST /v1/chat/completions naming the session in X-Eonyx-Session, with only the new
  user message (the first request of each session makes it: that request is timed too);
- history: POST /v1/chat/completions without the header, resending the whole conversation
  as OpenAI clients do (the session is found by the hash of its last exchange);
- responses: POST /v1/responses with the new input and the previous_response_id of the last
  answer (the session is found by the response's row);
- messages: POST /v1/messages (Anthropic's form, as Claude Code sends it) resending the whole
  conversation, the answers as text blocks (the session is found as for history);
- and, for the same four, the streamed form (`stream: true`; read to the end).

Every kind starts a new session every --turns-per-session turns, so all of them work on
sessions of the same sizes. Figures: client-measured latency p50/p99 per kind, and the ratio of
each facade kind's p50 to the direct turn's p50. Target: ratio <= 1.2 for every facade kind,
plain and streamed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

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
from werkzeug.serving import WSGIRequestHandler, make_server

from api.app import create_app
from api.context import runtime_of
from shared.core import sse
from shared.core.settings import load_settings
from shared.sessions import service as session_service
from workers.queue import celery_jobs

sys.path.insert(0, str(ROOT))  # tests/ is not installed; _common put the repo root first
from tests.fake_llm import FakeLLM

TARGET_RATIO = 1.2
KINDS = ("direct", "header", "history", "responses", "messages")
SESSION = "X-Eonyx-Session"


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class Conversation:
    """One kind's current session and the history an OpenAI client would resend."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.messages: list[dict[str, Any]] = []
        self.turns = 0
        self.response_id: str | None = None


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="timed turns per kind and mode")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument("--redis-url", default=None, help="turn lock on Redis (RedisLocks)")
    args = parser.parse_args()

    fake = FakeLLM().start()
    try:
        with workspace(args.database_url, keep=args.keep) as ws:
            env = {
                "DATA_DIR": str(ws.data_dir),
                "DATABASE_URL": ws.database_url,
                "HOME": str(ws.root),
                "EONYX_LLM_BASE_URL": fake.base_url,
                "EONYX_LLM_MODEL": "fake-model",
                "EONYX_LLM_CONTEXT_WINDOW": "128000",
                "LLM_MAX_RETRIES": "0",
                "RATE_LIMITS_ENABLED": "false",  # hundreds of turns a minute with one key
            }
            if args.redis_url:
                env["REDIS_URL"] = args.redis_url
            settings = load_settings(env)
            app = create_app(settings, jobs_queue=celery_jobs(settings))
            rt = runtime_of(app)
            server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            thread.start()
            url = f"http://127.0.0.1:{server.server_port}"
            client = httpx.Client(base_url=url, timeout=30)
            try:
                print_header(
                    "bench_facade",
                    ws,
                    f"{args.turns} turns per kind and mode, turn lock: {type(rt.locks).__name__}",
                )
                principal, token = bench_account(rt)
                client.headers["Authorization"] = f"Bearer {token}"
                samples = run(client, rt, principal, args)
            finally:
                client.close()
                server.shutdown()
                server.server_close()
                rt.close()
    finally:
        fake.stop()

    rows, checks = [], []
    for mode in ("plain", "stream"):
        base = median(samples[f"direct:{mode}"])
        for kind in KINDS:
            values = samples[f"{kind}:{mode}"]
            ratio = median(values) / base
            rows.append(
                [
                    f"{kind} ({mode})",
                    f"{median(values) / NS_PER_MS:.2f}",
                    f"{percentile(values, 99) / NS_PER_MS:.2f}",
                    f"{ratio:.3f}",
                ]
            )
            if kind != "direct":
                checks.append((f"{kind} {mode} p50 <= {TARGET_RATIO}x direct", ratio <= 1.2))
    print_table(["turn over HTTP", "p50 ms", "p99 ms", "p50 / direct"], rows)
    return verdict(checks)


def response_id(data: bytes, stream: bool) -> str:
    """The id of a response, from its body or from its stream's last event."""
    if not stream:
        return str(json.loads(data)["id"])
    decoder = sse.Decoder()
    events = [*decoder.feed(data), *decoder.end()]
    return str(events[-1].json()["response"]["id"])


def run(client: httpx.Client, rt: Any, principal: Any, args: Any) -> dict[str, list[int]]:
    every = args.turns_per_session
    conversations = {(kind, mode): Conversation() for kind in KINDS for mode in ("plain", "stream")}

    def send(kind: str, mode: str, content: str) -> None:
        conv = conversations[kind, mode]
        if conv.turns == every:
            conversations[kind, mode] = conv = Conversation()
        if kind == "direct" and conv.session_id is None:
            conv.session_id = session_service.create_session(rt, principal, rt.memory).id
        stream = mode == "stream"
        headers = {SESSION: conv.session_id} if kind == "header" and conv.session_id else {}
        if kind == "direct":
            path, body = f"/api/v1/sessions/{conv.session_id}/turns", {"content": content}
        elif kind == "responses":
            path, body = "/v1/responses", {"model": "default", "input": content}
            if conv.response_id:
                body["previous_response_id"] = conv.response_id
        elif kind == "messages":
            conv.messages.append({"role": "user", "content": content})
            path = "/v1/messages"
            body = {"model": "default", "max_tokens": 1024, "messages": conv.messages}
        else:
            conv.messages.append({"role": "user", "content": content})
            messages = conv.messages if kind == "history" else conv.messages[-1:]
            path, body = "/v1/chat/completions", {"model": "default", "messages": messages}
        body["stream"] = stream
        with client.stream("POST", path, json=body, headers=headers) as response:
            data = response.read()
        if response.status_code != 200:
            raise SystemExit(f"{kind} {mode}: {response.status_code} {data[:300]!r}")
        conv.session_id = response.headers.get(SESSION, conv.session_id)
        if kind == "responses":
            conv.response_id = response_id(data, stream)
        elif kind != "direct":
            answer: Any = content  # the fake echoes; the session count below makes sure
            if kind == "messages":
                answer = [{"type": "text", "text": content}]
            conv.messages.append({"role": "assistant", "content": answer})
        conv.turns += 1

    samples: dict[str, list[int]] = defaultdict(list)
    jobs: list[tuple[str, Callable[[str], None]]] = []
    for kind in KINDS:
        for mode in ("plain", "stream"):
            jobs.append((f"{kind}:{mode}", lambda c, k=kind, m=mode: send(k, m, c)))
    for round_number in range(args.warmup + args.turns):
        shift = round_number % len(jobs)
        for label, job in jobs[shift:] + jobs[:shift]:
            content = f"Question {round_number} about the cache and the index ({label})"
            started = time.perf_counter_ns()
            job(content)
            if round_number >= args.warmup:
                samples[label].append(time.perf_counter_ns() - started)
    # the history kind really continued its sessions: one session per `every` turns
    sessions = sum(1 for _ in rt.store.scan(principal.user_id))
    rounds = args.warmup + args.turns
    expected = len(KINDS) * 2 * -(-rounds // every)
    assert sessions == expected, f"{sessions} sessions, expected {expected}"
    return samples


if __name__ == "__main__":
    raise SystemExit(main())
