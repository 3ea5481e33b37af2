"""Fixtures for API tests that talk to a model: an app wired to the fake model server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from api.app import create_app
from api.context import runtime_of
from shared.runtime import Runtime
from tests.conftest import Account, Backend, create_account, make_settings
from tests.fake_llm import FakeLLM
from workers.queue import celery_jobs

API = "/api/v1"
SESSION = "X-Eonyx-Session"


class Chat:
    """An app wired to the fake model, a user, and helpers to talk to it."""

    def __init__(self, app: Flask, user: Account, llm: FakeLLM) -> None:
        self.app, self.user, self.llm = app, user, llm
        self.client: FlaskClient = app.test_client()
        self.rt: Runtime = runtime_of(app)

    def new_session(self) -> str:
        response = self.client.post(f"{API}/sessions", json={}, headers=self.user.headers)
        return response.get_json()["id"]

    def turn(self, session_id: str, **body: object):
        return self.client.post(
            f"{API}/sessions/{session_id}/turns", json=body, headers=self.user.headers
        )

    def transcript(self, session_id: str) -> list[tuple[str, str | None]]:
        items = self.client.get(
            f"{API}/sessions/{session_id}/messages", headers=self.user.headers
        ).get_json()["items"]
        return [(m["role"], m["content"]) for m in items]


@pytest.fixture
def make_chat(tmp_path: Path, backend: Backend, fake_llm: FakeLLM) -> Iterator[Callable[..., Chat]]:
    apps: list[Flask] = []

    def build(**env: str) -> Chat:
        values = {
            "EONYX_LLM_BASE_URL": fake_llm.base_url,
            "EONYX_LLM_MODEL": "fake-model",
            "LLM_MAX_RETRIES": "1",
            "LLM_READ_TIMEOUT_SECONDS": "5",
        } | env
        settings = make_settings(tmp_path / f"data{len(apps)}", backend, **values)
        app = create_app(settings, jobs_queue=celery_jobs(settings))
        apps.append(app)
        rt: Runtime = runtime_of(app)
        rt.db.migrate()
        rt.llm.backoff = 0.01
        return Chat(app, create_account(rt, f"user{len(apps)}"), fake_llm)

    yield build
    for app in apps:
        runtime_of(app).close()


@pytest.fixture
def chat(make_chat: Callable[..., Chat]) -> Chat:
    return make_chat()


class RecordingJobs:
    """A job queue that keeps what was sent (no worker runs in these tests)."""

    def __init__(self) -> None:
        self.sent: list[tuple[object, ...]] = []

    def enqueue(self, job: str, *args: object) -> str:
        self.sent.append((job, *args))
        return f"job-{len(self.sent)}"

    def status(self, job_id: str) -> dict[str, object]:
        return {"id": job_id, "state": "PENDING", "result": None, "error": None}

    def of(self, job: str) -> list[tuple[object, ...]]:
        return [s[1:] for s in self.sent if s[0] == job]


@contextmanager
def live_events(chat: Chat) -> Iterator[list[dict]]:
    """The user's events published while inside the block."""
    pubsub = chat.rt.redis.pubsub()
    pubsub.subscribe(f"eonyx:events:{chat.user.user_id}")
    assert pubsub.get_message(timeout=5)["type"] == "subscribe"  # listening from here on
    seen: list[dict] = []
    try:
        yield seen
    finally:
        while (message := pubsub.get_message(timeout=0.5)) is not None:
            seen.append(json.loads(message["data"]))
        pubsub.close()


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


@dataclass
class Facade:
    app: Flask
    rt: Runtime
    url: str
    user: Account
    llm: FakeLLM

    def client(self, api_key: str | None = None) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key=api_key or self.user.token, max_retries=0
        )

    def create(self, messages: list[dict[str, Any]], **options: Any) -> tuple[str, str]:
        """A plain completion: (its text, the session named in the response headers)."""
        raw = self.client().chat.completions.with_raw_response.create(
            model=options.pop("model", "default"), messages=messages, **options
        )
        return raw.parse().choices[0].message.content or "", raw.headers[SESSION]

    def sessions(self) -> list[dict[str, Any]]:
        response = httpx.get(self.url + "/api/v1/sessions", headers=self.user.headers)
        return response.json()["items"]

    def transcript(self, session_id: str) -> list[tuple[str, Any]]:
        response = httpx.get(
            f"{self.url}/api/v1/sessions/{session_id}/messages", headers=self.user.headers
        )
        return [(m["role"], m["content"]) for m in response.json()["items"]]


@pytest.fixture
def make_facade(
    tmp_path: Path, backend: Backend, fake_llm: FakeLLM
) -> Iterator[Callable[..., Facade]]:
    """Serve the app on loopback with these settings on top of the facade's usual ones."""
    stops: list[Callable[[], None]] = []

    def build(**env: str) -> Facade:
        settings = make_settings(
            tmp_path / f"data{len(stops) or ''}",
            backend,
            EONYX_LLM_BASE_URL=fake_llm.base_url,
            EONYX_LLM_MODEL="fake-model",
            LLM_MAX_RETRIES="0",
            **env,
        )
        app = create_app(settings, jobs_queue=RecordingJobs())
        rt = runtime_of(app)
        rt.db.migrate()
        account = create_account(rt, f"integrator{len(stops) or ''}", api=True)
        server: BaseWSGIServer = make_server(
            "127.0.0.1", 0, app, threaded=True, request_handler=_Quiet
        )
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
            rt.close()

        stops.append(stop)
        return Facade(app, rt, f"http://127.0.0.1:{server.port}", account, fake_llm)

    yield build
    for stop in stops:
        stop()


@pytest.fixture
def facade(make_facade: Callable[..., Facade]) -> Facade:
    return make_facade()
