"""A request id follows a turn into the job it sends: the API's log line and the worker
process's log line for that job name the same id (JSON lines, the default LOG_FORMAT)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.core import job_names, logs
from tests.api.conftest import API, Chat
from tests.conftest import wait_for
from tests.fake_llm import text
from tests.workers.test_title_worker import WORKER_START, worker

__all__ = ["worker"]  # the fixture: an `eonyx worker` process on the chat's settings

pytestmark = pytest.mark.slow


def json_lines(raw: str) -> list[dict]:
    found = []
    for line in raw.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue  # a worker may print a non-JSON banner line first
    return found


def test_the_request_id_is_in_the_api_line_and_in_its_jobs_line(
    make_chat: Callable[..., Chat],
    worker: Callable[[Chat], subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    chat = make_chat(SESSION_TITLE_MODE="llm")
    api_log = io.StringIO()
    handler = logs.configure(chat.rt.settings, stream=api_log)
    try:
        session_id = chat.new_session()
        chat.llm.script(text("Pack light and book early."), text("Packing for Lisbon"))
        response = chat.client.post(
            f"{API}/sessions/{session_id}/turns",
            json={"content": "Tips for a weekend in Lisbon?"},
            headers=chat.user.headers | {"X-Request-Id": "lisbon-7"},
        )
        assert response.status_code == 200
    finally:
        logging.getLogger().removeHandler(handler)
    api_lines = [line for line in json_lines(api_log.getvalue()) if line.get("outcome") == "ok"]
    assert [line["request_id"] for line in api_lines] == ["lisbon-7"]

    worker(chat)
    log_file = tmp_path / "worker.log"

    def job_line() -> dict | None:
        for line in json_lines(log_file.read_text(errors="replace")):
            if (
                line.get("task") == job_names.SESSION_TITLE
                and line.get("message") == "job finished"
            ):
                return line
        return None

    line = wait_for(job_line, timeout=WORKER_START, what="the title job's log line")
    assert line["request_id"] == "lisbon-7"
    assert line["state"] == "SUCCESS"
    assert line["job_id"]
    # Every line the job wrote while it ran carries the id (Celery's own included).
    during = [
        entry
        for entry in json_lines(log_file.read_text(errors="replace"))
        if entry.get("job_id") == line["job_id"]
    ]
    assert during
    assert all(entry["request_id"] == "lisbon-7" for entry in during)
