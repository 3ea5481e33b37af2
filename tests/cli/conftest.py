"""Fixtures of the CLI tests: a live server on loopback whose app is wired to the fake model
(`make_live`, `live`) for the client commands (`eonyx run`, `eonyx chat`), which talk to it over
HTTP like they would to a remote one; a plain live server and a CLI runner for it (`server_url`,
`runner`, `login`); and `start_serve`, which runs `eonyx serve` itself (tests/cli/serving.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from flask import Flask
from werkzeug.serving import make_server

from api.app import create_app
from api.context import runtime_of
from cli.command import main
from shared.runtime import Runtime
from tests.cli.serving import start_serve
from tests.conftest import Account, Backend, create_account, make_settings
from tests.fake_llm import FakeLLM
from workers.queue import celery_jobs

__all__ = ["start_serve"]


@dataclass
class Live:
    """A served app, its user, the fake model and a CLI runner pointed at them."""

    url: str
    app: Flask
    user: Account
    llm: FakeLLM
    runner: CliRunner
    color: bool = False  # keep click's ANSI styles in the output

    @property
    def rt(self) -> Runtime:
        return runtime_of(self.app)

    def run(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(main, ["run", *args], input=input, color=self.color)

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        response = httpx.request(
            method, f"{self.url}/api/v1{path}", headers=self.user.headers, **kwargs
        )
        assert response.status_code < 400, response.text
        if not response.content:
            return None
        is_json = response.headers.get("content-type", "").startswith("application/json")
        return response.json() if is_json else response.text

    def transcript(self, session_id: str) -> list[tuple[str, str | None]]:
        items = self.api("GET", f"/sessions/{session_id}/messages")["items"]
        return [(m["role"], m["content"]) for m in items]

    def session_ids(self) -> list[str]:
        return [item["id"] for item in self.api("GET", "/sessions")["items"]]

    @property
    def system_prompt(self) -> str:
        messages = self.llm.completions[-1].messages
        assert messages[0]["role"] == "system"
        return messages[0]["content"]


@pytest.fixture
def make_live(
    tmp_path: Path, backend: Backend, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Live]]:
    # Run from a project root with no AGENTS.md, so the developer's own files stay out.
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "eonyx.json").write_text("{}")
    monkeypatch.chdir(quiet)
    stops: list[Callable[[], None]] = []

    def build(*, color: bool = False, model: bool = True, **env: str) -> Live:
        values = {"LLM_MAX_RETRIES": "0", "LLM_READ_TIMEOUT_SECONDS": "5"}
        if model:
            values |= {"EONYX_LLM_BASE_URL": fake_llm.base_url, "EONYX_LLM_MODEL": "fake-model"}
        data = tmp_path / f"data{len(stops)}"
        settings = make_settings(data, backend, **(values | env))
        app = create_app(settings, jobs_queue=celery_jobs(settings))
        rt: Runtime = runtime_of(app)
        rt.db.migrate()
        user = create_account(rt, f"user{len(stops)}")
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(5)
            rt.close()

        stops.append(stop)
        url = f"http://127.0.0.1:{server.port}"
        runner = CliRunner(
            env={
                "XDG_CONFIG_HOME": str(tmp_path / "config"),
                "EONYX_URL": url,
                "EONYX_TOKEN": user.token,
            },
        )
        return Live(url, app, user, fake_llm, runner, color)

    yield build
    for stop in stops:
        stop()


@pytest.fixture
def live(make_live: Callable[..., Live]) -> Live:
    return make_live()


@pytest.fixture
def server_url(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.port}"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def runner(tmp_path: Path, server_url: str) -> CliRunner:
    return CliRunner(
        env={
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "EONYX_URL": server_url,
            "EONYX_TOKEN": None,
        }
    )


def login(runner: CliRunner, username: str = "alice", password: str = "correct horse"):
    return runner.invoke(main, ["login"], input=f"{username}\n{password}\n")
