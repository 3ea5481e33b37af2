"""Operating the API: /metrics after turns and jobs, per-token rate limits, request ids in
the log lines of a request and in the headers of the jobs it sends.

Metrics are per process (prometheus_client), so each test compares a value before and
after what it does rather than assuming it starts at zero.
"""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from openai import OpenAI, RateLimitError
from werkzeug.serving import make_server

from api.app import create_app
from api.context import runtime_of
from shared.core import job_names, logs
from tests.api.conftest import API, Chat
from tests.api.websockets import connect, live
from tests.conftest import OwnRedis, create_account, make_settings, wait_for
from tests.fake_llm import error, text
from workers.queue import celery_jobs

TOKEN = "metrics-token-0123456789"
SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$", re.MULTILINE)


def scrape(chat: Chat) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = chat.client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.data
    assert response.mimetype == "text/plain"
    samples = {}
    for match in SAMPLE.finditer(response.get_data(as_text=True)):
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match["labels"] or ""))
        samples[(match["name"], labels)] = float(match["value"])
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def watched(make_chat: Callable[..., Chat]) -> Chat:
    return make_chat(METRICS_TOKEN=TOKEN, SESSION_TITLE_MODE="llm")


@pytest.fixture
def served_chat() -> Iterator[Callable[[Chat], str]]:
    """Serve a chat's app on loopback (for clients that need a real server)."""
    servers = []

    def serve(chat: Chat) -> str:
        server = make_server("127.0.0.1", 0, chat.app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_metrics_count_turns_and_model_calls_by_outcome(watched: Chat) -> None:
    before = scrape(watched)
    session_id = watched.new_session()
    watched.llm.script(text("Fine, thanks."))
    assert watched.turn(session_id, content="How are you?").status_code == 200
    watched.llm.script(error(500, "overloaded"), error(500, "overloaded"))
    assert watched.turn(session_id, content="Still there?").status_code == 502
    after = scrape(watched)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("eonyx_turn_seconds_count", outcome="ok") == 1
    assert grew("eonyx_turn_seconds_count", outcome="model_error") == 1
    assert grew("eonyx_model_call_seconds_count", role="chat", offering="default") == 2
    assert (
        grew(
            "eonyx_model_call_errors_total",
            role="chat",
            offering="default",
            error="llm_unavailable",
        )
        == 1
    )
    assert grew("eonyx_model_tokens_total", role="chat", offering="default", kind="prompt") > 0
    assert grew("eonyx_model_tokens_total", role="chat", offering="default", kind="completion") > 0
    # The title job the first turn sent waits in the queue (no worker runs here).
    assert value(after, "eonyx_queue_depth", queue="eonyx") >= 1


def test_metrics_count_a_job_run_by_its_task(watched: Chat) -> None:
    session_id = watched.new_session()
    watched.llm.script(text("Pack light."), text("Packing tips"))
    assert watched.turn(session_id, content="Tips for Lisbon?").status_code == 200
    before = scrape(watched)
    celery = watched.rt.jobs.app  # type: ignore[union-attr]
    celery.loader.import_default_modules()  # the task modules, as a worker loads them
    # The task as a worker runs it (eagerly, in this process: Celery's signals fire alike),
    # on the worker's own runtime, closed at the end as a worker closes it.
    title = celery.tasks[job_names.SESSION_TITLE]
    try:
        outcome = title.apply(args=(watched.user.user_id, session_id))
        assert outcome.successful(), outcome.traceback
        title.apply(args=(watched.user.user_id, "20200101T000000-00000000"))
    finally:
        celery.close_runtime()
    after = scrape(watched)
    runs = value(after, "eonyx_job_runs_total", task=job_names.SESSION_TITLE)
    assert runs - value(before, "eonyx_job_runs_total", task=job_names.SESSION_TITLE) == 2
    seconds = value(after, "eonyx_job_seconds_count", task=job_names.SESSION_TITLE)
    assert seconds - value(before, "eonyx_job_seconds_count", task=job_names.SESSION_TITLE) == 2
    grew = value(after, "eonyx_model_call_seconds_count", role="session_title", offering="default")
    assert (
        grew
        - value(before, "eonyx_model_call_seconds_count", role="session_title", offering="default")
        == 1
    )


def test_metrics_show_the_events_sockets_open(watched: Chat) -> None:
    before = value(scrape(watched), "eonyx_events_sockets_open")
    with live(watched.app) as url:
        ws = connect(f"{url}?token={watched.user.token}")
        try:
            assert ws.next_json() == {"type": "ready"}
            assert value(scrape(watched), "eonyx_events_sockets_open") == before + 1
        finally:
            ws.hang_up()
        wait_for(
            lambda: value(scrape(watched), "eonyx_events_sockets_open") == before,
            timeout=10,
            what="the closed socket to leave the gauge",
        )


def test_metrics_need_the_token_and_are_off_without_one(
    watched: Chat, make_chat: Callable[..., Chat]
) -> None:
    assert watched.client.get("/metrics").status_code == 401
    wrong = watched.client.get("/metrics", headers={"Authorization": "Bearer nope-nope-nope-nope"})
    assert wrong.status_code == 401
    assert wrong.get_json()["error"]["code"] == "invalid_token"
    unwatched = make_chat()
    off = unwatched.client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert off.status_code == 404


def test_a_token_over_its_turn_limit_gets_429_with_retry_after(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(RATE_LIMIT_TURNS_PER_MINUTE="2")
    session_id = chat.new_session()
    chat.llm.script(text("one"), text("two"), text("three"))
    assert chat.turn(session_id, content="1").status_code == 200
    assert chat.turn(session_id, content="2").status_code == 200
    refused = chat.turn(session_id, content="3")
    assert refused.status_code == 429
    assert refused.get_json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert [content for _, content in chat.transcript(session_id)][-2:] == ["2", "two"]
    # Other calls of the same token are not turns, and another token has its own budget.
    assert chat.client.get(f"{API}/sessions", headers=chat.user.headers).status_code == 200
    other = create_account(chat.rt, "other")
    other_session = chat.client.post(f"{API}/sessions", json={}, headers=other.headers)
    turn = chat.client.post(
        f"{API}/sessions/{other_session.get_json()['id']}/turns",
        json={"content": "hi"},
        headers=other.headers,
    )
    assert turn.status_code == 200


def test_the_facade_shares_the_turn_budget_and_answers_in_openai_shape(
    make_chat: Callable[..., Chat], served_chat: Callable[[Chat], str]
) -> None:
    chat = make_chat(RATE_LIMIT_TURNS_PER_MINUTE="1")
    key = create_account(chat.rt, "integration", api=True)
    client = OpenAI(base_url=served_chat(chat) + "/v1", api_key=key.token, max_retries=0)
    chat.llm.script(text("first"))
    messages = [{"role": "user", "content": "Hi"}]
    client.chat.completions.create(model="default", messages=messages)  # type: ignore[arg-type]
    with pytest.raises(RateLimitError) as refused:
        client.chat.completions.create(model="default", messages=messages)  # type: ignore[arg-type]
    assert refused.value.status_code == 429
    assert refused.value.body["type"] == "rate_limit_error"  # type: ignore[index]
    assert int(refused.value.response.headers["Retry-After"]) >= 1


def test_a_token_over_its_request_limit_gets_429_but_health_checks_never_do(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(RATE_LIMIT_REQUESTS_PER_MINUTE="3")
    statuses = [
        chat.client.get(f"{API}/sessions", headers=chat.user.headers).status_code for _ in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    assert all(chat.client.get("/healthz").status_code == 200 for _ in range(5))


def test_random_bearer_tokens_spend_their_addresss_budget_not_a_fresh_one_each(
    make_chat: Callable[..., Chat],
) -> None:
    """A made-up token per request once bought a fresh budget each time (1,300 of 1,300
    answered 401): now an invalid token counts against its address, as a request without
    one does. A valid token from the same address keeps its own budget."""
    chat = make_chat(RATE_LIMIT_REQUESTS_PER_MINUTE="5")
    answers = [
        chat.client.get(
            f"{API}/sessions", headers={"Authorization": f"Bearer eyx_{secrets.token_urlsafe(32)}"}
        )
        for _ in range(6)
    ]
    assert [a.status_code for a in answers] == [401] * 5 + [429]
    refused = answers[-1]
    assert refused.get_json()["error"]["code"] == "rate_limited"
    assert "this address" in refused.get_json()["error"]["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # the address's anonymous requests share that budget (a sign-in attempt included)...
    anonymous = chat.client.post(f"{API}/auth/login", json={"username": "x", "password": "y"})
    assert anonymous.status_code == 429
    # ...and a valid token from the same address does not
    assert chat.client.get(f"{API}/sessions", headers=chat.user.headers).status_code == 200


def test_replicas_share_a_tokens_budget_and_a_redis_failure_lets_requests_through(
    make_chat: Callable[..., Chat],
    own_redis: OwnRedis,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    one = make_chat(RATE_LIMIT_REQUESTS_PER_MINUTE="3")
    two = make_chat(RATE_LIMIT_REQUESTS_PER_MINUTE="3")  # another replica: the same Redis
    listed = [
        replica.client.get(f"{API}/sessions", headers=one.user.headers).status_code
        for replica in (one, two, one, two)
    ]
    assert listed == [200, 200, 200, 429]
    # A replica whose Redis goes away counts nothing, and refuses nothing for it.
    settings = make_settings(
        tmp_path / "alone",
        DATABASE_URL=f"sqlite:///{tmp_path / 'alone.db'}",
        REDIS_URL=f"redis://127.0.0.1:{own_redis.port}/0",
        RATE_LIMIT_REQUESTS_PER_MINUTE="2",
    )
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt = runtime_of(app)
    try:
        rt.db.migrate()
        alone = create_account(rt, "alone")
        client = app.test_client()
        assert client.get(f"{API}/sessions", headers=alone.headers).status_code == 200
        own_redis.stop()
        with caplog.at_level(logging.WARNING, logger="api.ratelimit"):
            statuses = [
                client.get(f"{API}/sessions", headers=alone.headers).status_code for _ in range(3)
            ]
        assert statuses == [200, 200, 200]
        said = [r.getMessage() for r in caplog.records if r.name == "api.ratelimit"]
        assert len(said) == 1, said  # one line for the outage, not one per request
        assert said[0].startswith("rate limits are not counted until Redis answers again")
        # Redis back: counting resumes (and says so), so the budget is enforced again.
        own_redis.start()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="api.ratelimit"):
            statuses = [
                client.get(f"{API}/sessions", headers=alone.headers).status_code for _ in range(3)
            ]
        assert statuses == [200, 200, 429]
        assert "rate limits are counted again: Redis answers" in caplog.text
    finally:
        rt.close()


def test_rate_limits_can_be_switched_off(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(RATE_LIMITS_ENABLED="false", RATE_LIMIT_REQUESTS_PER_MINUTE="1")
    for _ in range(3):
        assert chat.client.get(f"{API}/sessions", headers=chat.user.headers).status_code == 200


@pytest.fixture
def log_lines(watched: Chat) -> Iterator[Callable[[], list[dict]]]:
    """The JSON lines the process logs while the test runs, as the entry points set it up."""
    stream = io.StringIO()
    handler = logs.configure(watched.rt.settings, stream=stream)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root = logging.getLogger()
        root.removeHandler(handler)
        root.setLevel(logging.WARNING)


def test_a_request_id_is_in_the_response_the_log_lines_and_the_jobs_it_sends(
    watched: Chat, log_lines: Callable[[], list[dict]]
) -> None:
    session_id = watched.new_session()
    watched.llm.script(text("Pack light."))
    response = watched.client.post(
        f"{API}/sessions/{session_id}/turns",
        json={"content": "Tips for Lisbon?"},
        headers=watched.user.headers | {"X-Request-Id": "trip-42"},
    )
    assert response.status_code == 200
    assert response.headers["X-Request-Id"] == "trip-42"
    turn_lines = [line for line in log_lines() if line.get("outcome") == "ok"]
    assert turn_lines
    assert turn_lines[-1]["request_id"] == "trip-42"
    assert turn_lines[-1]["session_id"] == session_id
    assert {"time", "level", "logger", "message"} <= set(turn_lines[-1])
    # The title job waits in Redis with the request id in its Celery headers.
    queued = [json.loads(raw) for raw in watched.rt.redis.lrange("eonyx", 0, -1)]  # type: ignore[union-attr]
    titles = [m for m in queued if m["headers"]["task"] == job_names.SESSION_TITLE]
    assert [m["headers"].get("eonyx_request_id") for m in titles] == ["trip-42"]


def test_a_missing_or_unsafe_request_id_is_replaced(watched: Chat) -> None:
    fresh = watched.client.get("/healthz")
    first = fresh.headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert watched.client.get("/healthz").headers["X-Request-Id"] != first
    for unsafe in ("has space", "x" * 200, "-starts-with-dash", "ünïcode"):
        header = unsafe.encode().decode("latin-1")  # as the bytes arrive on the wire
        given = watched.client.get("/healthz", headers={"X-Request-Id": header})
        assert re.fullmatch(r"[0-9a-f]{32}", given.headers["X-Request-Id"]), unsafe
