"""Events cross processes: a title job run by an `eonyx worker` process reaches a WebSocket
client of the API process through Redis pub/sub (on each backend: the embedded Redis on a
unix socket with SQLite, and the real Redis with PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.api.conftest import API, Chat
from tests.api.websockets import connect, live
from tests.conftest import Backend, eonyx_executable
from tests.fake_llm import FakeLLM, text

pytestmark = pytest.mark.slow

WORKER_START = 60.0  # the job waits in the queue until the worker is up


@pytest.fixture
def worker(
    backend: Backend, fake_llm: FakeLLM, tmp_path: Path
) -> Iterator[Callable[[Chat], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(chat: Chat) -> subprocess.Popen[bytes]:
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
        }
        with (tmp_path / "worker.log").open("wb") as log:
            process = subprocess.Popen(
                [eonyx_executable(), "worker", "--concurrency", "1"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(process)
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_title_named_by_a_worker_process_reaches_the_socket(
    make_chat: Callable[..., Chat],
    worker: Callable[[Chat], subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    chat = make_chat(SESSION_TITLE_MODE="llm")
    process = worker(chat)
    with live(chat.app) as url:
        ws = connect(f"{url}?token={chat.user.token}")
        try:
            assert ws.next_json() == {"type": "ready"}
            session_id = chat.new_session()
            chat.llm.script(text("Pack light and book early."), text("Packing for Lisbon"))
            assert chat.turn(session_id, content="Tips for a weekend in Lisbon?").status_code == 200
            event = ws.next_json(timeout=WORKER_START)
        finally:
            ws.hang_up()
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert process.poll() is None, log
    assert event == {
        "type": "session.title",
        "session_id": session_id,
        "title": "Packing for Lisbon",
        "title_pending": False,
    }, log
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert (item["title"], item["title_pending"]) == ("Packing for Lisbon", False)
    assert "eonyx.sessions.title" in log  # the worker ran it, not this process
