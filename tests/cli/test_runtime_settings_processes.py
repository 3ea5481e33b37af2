"""A settings change made through one API process reaches another API process and the worker
of the same deployment, without a restart: real processes (`eonyx serve`, which runs gunicorn
and the worker, and a second gunicorn on the same data directory, database and Redis) and the
fake model, which sees the worker's calls."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from shared.sessions import titles
from tests.cli.serving import PASSWORD, Served, admin_client, ready, serve_environment
from tests.conftest import free_port, wait_for
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, last_user_text, text

OPENING = "How should I plan a week in Paris in spring, with two kids?"
TITLE = "Paris with kids"
LEARNED = "Travels with two children."


def answer(request: RecordedRequest) -> Reply:
    """The chat's answer, the title job's, or the profile extraction's."""
    messages = request.messages
    if messages and messages[0].get("content") == titles.INSTRUCTIONS:
        return text(TITLE)
    if "<profile>" in last_user_text(request.body):
        return text(json.dumps({"entries": [LEARNED]}))
    return text("Start with the Jardin du Luxembourg.")


def title_requests(llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in llm.completions if r.messages[0].get("content") == titles.INSTRUCTIONS]


@pytest.fixture
def second_api(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], str]]:
    """`second_api(env)`: another API process (gunicorn, one worker) with this environment;
    its URL once it answers. Stopped at the end of the test."""
    started: list[subprocess.Popen[bytes]] = []
    log = (tmp_path / "second-api.log").open("wb")

    def start(env: dict[str, str]) -> str:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "api.wsgi:app"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            assert process.poll() is None, (tmp_path / "second-api.log").read_text()
            try:
                return httpx.get(url + "/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, 60, "the second API process")
        return url

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    log.close()


def test_a_change_through_one_api_reaches_another_api_process_and_the_worker(
    start_serve: Callable[..., Served],
    second_api: Callable[[dict[str, str]], str],
    fake_llm: FakeLLM,
    tmp_path: Path,
) -> None:
    fake_llm.set_default(answer)
    model = {"EONYX_LLM_BASE_URL": fake_llm.base_url, "EONYX_LLM_MODEL": "fake-model"}
    served = start_serve("--workers", "1", **model)
    first = served.wait_url()
    server = json.loads((served.data_dir / "run" / "settings.json").read_text())["environment"]
    shared = {name: server[name] for name in ("DATABASE_URL", "REDIS_URL")}
    second = second_api(serve_environment(tmp_path) | model | shared)

    with admin_client(served, first) as a, httpx.Client(base_url=second, timeout=10) as b:
        wait_for(lambda: ready(a), 60, "/readyz with the worker")
        login = b.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        b.headers["Authorization"] = f"Bearer {login.json()['token']}"

        # The second process has read the switches (from the environment) and keeps them.
        shown = b.get("/api/v1/settings").json()
        assert shown["session_title_mode"]["source"] == "environment"
        before = b.post("/api/v1/sessions", json={}).json()
        assert before["title_pending"] is False  # titles from the first words

        changed = a.patch(
            "/api/v1/settings",
            json={
                "session_title_mode": "llm",
                "user_memory_extraction": True,
                "user_memory_extraction_every_n_turns": 1,
            },
        )
        assert changed.status_code == 200, changed.text

        # The second API process follows at once (heard over Redis: it would otherwise keep
        # what it read for 30 s).
        changed_at = time.monotonic()

        def pending_session() -> dict | None:
            # A session is made by its first message (POST /sessions/turns; an empty one
            # waits with no title pending): in llm mode its title waits for the worker.
            made = b.post("/api/v1/sessions/turns", json={"content": OPENING})
            assert made.status_code == 201, made.text
            got = b.get(f"/api/v1/sessions/{made.json()['session_id']}").json()
            return got if got["title_pending"] or got["title"] == TITLE else None

        session = wait_for(
            pending_session, 10, "a new session waiting for a model's title", interval=0.3
        )
        heard_after = time.monotonic() - changed_at
        assert heard_after < 10

        # A turn there: the worker names the session and learns the profile from it, which
        # it does only if it sees both switches on (the environment has them off).
        turn = b.post(f"/api/v1/sessions/{session['id']}/turns", json={"content": OPENING})
        assert turn.status_code == 200, turn.text

        def titled() -> str | None:
            got = b.get(f"/api/v1/sessions/{session['id']}").json()
            return got["title"] if not got["title_pending"] else None

        assert wait_for(titled, 60, "the worker's title") == TITLE
        assert len(title_requests(fake_llm)) == 1

        def learned() -> str | None:
            content = b.get("/api/v1/memory/user").json()["content"]
            return content if LEARNED in content else None

        wait_for(learned, 60, "the worker's profile extraction")
    print(f"the second API process saw the change within {heard_after:.2f} s")
