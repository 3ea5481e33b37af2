"""No user text in a log line (issue 38, item 6): a Teams message, a chat turn, a like and an
import carry a marker; the API process (at DEBUG) and a real `eonyx worker` process (at
DEBUG, JSON lines) run everything they send, and the marker is in none of their lines.

Celery logs each job it receives (`celery.worker.strategy`) and each that succeeds, with its
result (`celery.app.trace`), with the job's arguments in the line's data; a Teams job's
arguments hold the message, and a title job's result a title made of the turn. Only a real
worker logs those lines (an eager run does not), so the jobs go through Redis to one."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.core import job_names, logs
from shared.integrations.teams import links
from tests.api.conftest import API, Chat
from tests.conftest import Backend, eonyx_executable, wait_for
from tests.fake_botframework import USER_AAD_ID, FakeBotFramework, fake_botframework
from tests.fake_llm import FakeLLM
from tests.workers.test_job_logs import json_lines
from tests.workers.test_title_worker import WORKER_START

__all__ = ["fake_botframework"]  # the fixture: a fake Bot Framework on loopback

pytestmark = pytest.mark.slow

JOBS = {
    job_names.TEAMS_TURN,  # its argument: the Teams message
    job_names.SESSION_TITLE,  # its result: a title made of the turn
    job_names.EXTRACT_MEMORY,
    job_names.CURATE_MEMORY,  # the like
}


@pytest.fixture
def debug_worker(
    backend: Backend, fake_llm: FakeLLM, fake_botframework: FakeBotFramework, tmp_path: Path
) -> Iterator[Callable[[Chat], Path]]:
    """start(chat): an `eonyx worker` on the chat's settings at LOG_LEVEL=debug; its log."""
    started: list[subprocess.Popen[bytes]] = []
    log_file = tmp_path / "worker.log"

    def start(chat: Chat) -> Path:
        settings = chat.rt.settings
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "EONYX_URL")}
        env |= {
            "DATA_DIR": str(settings.data_dir),
            "HOME": str(tmp_path),
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": backend.redis_url,
            "EONYX_LLM_BASE_URL": fake_llm.base_url,
            "EONYX_LLM_MODEL": "fake-model",
            "SESSION_TITLE_MODE": "llm",
            "USER_MEMORY_EXTRACTION": "true",
            "USER_MEMORY_EXTRACTION_EVERY_N_TURNS": "1",
            "LOG_LEVEL": "debug",
            **fake_botframework.settings_env,
        }
        with log_file.open("wb") as log:
            started.append(
                subprocess.Popen(
                    [eonyx_executable(), "worker", "--concurrency", "1"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        return log_file

    yield start
    for process in started:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_no_user_text_reaches_a_log_line_of_the_api_or_the_worker(
    make_chat: Callable[..., Chat],
    debug_worker: Callable[[Chat], Path],
    fake_botframework: FakeBotFramework,
) -> None:
    marker = f"Hunter2-Secret-{uuid.uuid4().hex[:10]}"
    chat = make_chat(
        SESSION_TITLE_MODE="llm",
        USER_MEMORY_EXTRACTION="true",
        USER_MEMORY_EXTRACTION_EVERY_N_TURNS="1",
        LOG_LEVEL="debug",
        **fake_botframework.settings_env,
    )
    with chat.rt.db.session() as db:
        links.link(db, chat.user.username, USER_AAD_ID)
    api_log = io.StringIO()
    handler = logs.configure(chat.rt.settings, stream=api_log)
    try:
        # A chat turn (the fake model echoes it: the answer and the title hold it too).
        session_id = chat.new_session()
        turn = chat.turn(session_id, content=f"my VPN password is {marker}")
        assert turn.status_code == 200, turn.get_data(as_text=True)
        message_id = turn.get_json()["user_message"]["id"]
        # A like of it: the curation job.
        liked = chat.client.post(
            f"{API}/sessions/{session_id}/messages/{message_id}/like", headers=chat.user.headers
        )
        assert liked.status_code == 202, liked.get_data(as_text=True)
        # An import of the session: its bundle holds the marker.
        bundle = chat.client.get(
            f"{API}/sessions/{session_id}/export?format=zip", headers=chat.user.headers
        ).data
        imported = chat.client.post(
            f"{API}/sessions/import",
            data=bundle,
            content_type="application/zip",
            headers=chat.user.headers,
        )
        assert imported.status_code == 201, imported.get_data(as_text=True)
        # A Teams message: the job's argument is the message.
        activity = fake_botframework.activity(f"the Teams one is {marker}")
        queued = chat.client.post(
            "/integrations/teams/messages",
            data=json.dumps(activity),
            headers={"Authorization": f"Bearer {fake_botframework.sign()}"},
            content_type="application/json",
        )
        assert queued.status_code == 202, queued.get_data(as_text=True)
    finally:
        logging.getLogger().removeHandler(handler)

    log_file = debug_worker(chat)

    def finished() -> list[dict] | None:
        lines = json_lines(log_file.read_text(errors="replace"))
        done = {line.get("task") for line in lines if line.get("message") == "job finished"}
        return lines if done >= JOBS else None

    lines = wait_for(finished, timeout=WORKER_START, what="the worker's jobs")
    reply = fake_botframework.wait_for_replies(1, timeout=WORKER_START)[0]
    assert marker in reply.text  # the marker went all the way through the worker
    # Celery's own lines were written (at INFO and DEBUG), with the jobs' names and ids.
    received = [line for line in lines if line.get("logger") == "celery.worker.strategy"]
    assert {job for job in JOBS if any(job in line["message"] for line in received)} == JOBS
    assert any(line.get("logger") == "celery.app.trace" for line in lines)
    assert any(line.get("level") == "DEBUG" for line in lines)

    worker_text = log_file.read_text(errors="replace")
    assert marker not in worker_text, [line for line in worker_text.splitlines() if marker in line]
    api_text = api_log.getvalue()
    assert "DEBUG" in api_text  # the API process logged at DEBUG too
    assert marker not in api_text, [line for line in api_text.splitlines() if marker in line]
