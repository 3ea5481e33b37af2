"""When a service Eonyx needs is missing or down, the API says so with a 503 JSON error, and
what was already saved stays saved."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from api.app import create_app
from api.context import runtime_of
from shared.chat.compaction import SUMMARIZER_INSTRUCTIONS
from shared.chat.context import precompute_summary
from shared.runtime import Runtime
from tests.api.conftest import API, Chat
from tests.conftest import create_account, make_settings
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, error, text
from workers.queue import celery_jobs


def test_no_job_queue_is_503(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))  # no REDIS_URL, no embedded Redis
    rt: Runtime = runtime_of(app)
    rt.db.migrate()
    admin = create_account(rt, "root", admin=True)
    response = app.test_client().post(f"{API}/index/rebuild", headers=admin.headers)
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "no_queue"
    rt.close()


def test_unreachable_redis_is_503_and_nothing_is_lost(tmp_path: Path, fake_llm: FakeLLM) -> None:
    settings = make_settings(
        tmp_path / "data",
        REDIS_URL="redis://127.0.0.1:1/0",
        EONYX_LLM_BASE_URL=fake_llm.base_url,
        EONYX_LLM_MODEL="m",
    )
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt: Runtime = runtime_of(app)
    rt.db.migrate()
    user = create_account(rt, "ada")
    client = app.test_client()
    session_id = client.post(f"{API}/sessions", json={}, headers=user.headers).get_json()["id"]
    response = client.post(
        f"{API}/sessions/{session_id}/turns", json={"content": "hi"}, headers=user.headers
    )
    assert response.status_code == 503
    assert "Redis cannot be reached" in response.get_json()["error"]["message"]
    assert fake_llm.requests == []
    listed = client.get(f"{API}/sessions", headers=user.headers).get_json()["items"]
    assert [s["id"] for s in listed] == [session_id]
    rt.close()


def test_a_failing_summarizer_does_not_block_the_session_below_100_percent(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="1000")
    summary_requests: list[RecordedRequest] = []

    def reply(request: RecordedRequest) -> Reply:
        if request.messages[0]["content"] == SUMMARIZER_INSTRUCTIONS:
            summary_requests.append(request)
            return error(400, "summaries are broken today")
        return text("ok")

    chat.llm.set_default(reply)
    session_id = chat.new_session()
    for n in range(1, 7):
        response = chat.turn(session_id, content=f"turn {n}: " + "x" * 400)
        assert response.status_code == 200, response.get_json()
    assert summary_requests  # compaction was tried, failed, and the turns still answered
    assert len(chat.transcript(session_id)) == 12


def test_a_worker_precomputing_a_summary_during_an_outage_logs_one_line(
    make_chat: Callable[..., Chat], caplog: pytest.LogCaptureFixture
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="1000")

    def reply(request: RecordedRequest) -> Reply:
        if request.messages[0]["content"] == SUMMARIZER_INSTRUCTIONS:
            return error(503, "the summarizer is down")
        return text("ok")

    chat.llm.set_default(reply)
    session_id = chat.new_session()
    for n in range(1, 20):  # until the history no longer fits without a summary
        if chat.turn(session_id, content=f"turn {n}: " + "x" * 400).status_code == 502:
            break
    else:
        pytest.fail("the history never outgrew the window")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert precompute_summary(chat.rt, chat.user.user_id, session_id) is False
    lines = [r for r in caplog.records if "not precomputed" in r.getMessage()]
    assert len(lines) == 1
    assert "the summarizer is down" in lines[0].getMessage()
    assert all(r.exc_info is None for r in caplog.records)
