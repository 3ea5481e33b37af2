"""Replicas that outlive one another: two API processes (gunicorn with
deploy/gunicorn.conf.py) and two workers on one DATA_DIR, PostgreSQL and Redis, as a team
runs them on several hosts. One of each is SIGKILLed mid-work (an OOM kill, a lost host, a
`docker kill`): what it held is freed and what it was doing is done by the other.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import httpx
import pytest

from tests.conftest import eonyx_executable, wait_for
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, last_user_text, model_answer, text
from tests.workers.test_worker_processes import PASSWORD, Proc, Stack, stack, start_api

__all__ = ["stack"]  # the fixture: processes stopped at the end whatever happens

pytestmark = [pytest.mark.slow, pytest.mark.services]

RECOVERY = 60.0  # the bound: the killed replica's session answers again within this
JOB_REDONE = 120.0  # a dead worker's job done by the other (visibility timeout + lock TTL)
HANGS = 600.0  # a call the fake model holds this long is cut off by the SIGKILL, not by it
MEMORY_ENTRY = "The user deploys with Podman"


class SlowOnce:
    """The fake model's answers, with the first request that `matches` held (until the
    process that sent it is killed): a model call in flight when its replica dies."""

    def __init__(self, matches: Any) -> None:
        self.matches = matches
        self.held = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        answer = curation_answer(request) if is_curation(request) else model_answer(request)
        with self._lock:
            if self.matches(request) and not self.held.is_set():
                self.held.set()
                return replace(answer, delay=HANGS)
        return answer


def is_curation(request: RecordedRequest) -> bool:
    return "The exchange to remember:" in last_user_text(request.body)


def curation_answer(request: RecordedRequest) -> Reply:
    return text(json.dumps({"operations": [{"action": "add", "content": MEMORY_ENTRY}]}))


def kill(proc: Proc) -> None:
    """SIGKILL the process and its children (gunicorn's master and workers), as a host lost
    or `docker kill` does: nothing runs its clean-up."""
    os.killpg(proc.process.pid, signal.SIGKILL)
    proc.process.wait(10)


def prepare(stack: Stack, fake_llm: FakeLLM, **env: str) -> None:
    stack.env |= {
        "EONYX_LLM_BASE_URL": fake_llm.base_url,
        "EONYX_LLM_MODEL": "fake-model",
        "LLM_READ_TIMEOUT_SECONDS": str(HANGS + 60),  # the replica is killed first
        "LLM_MAX_RETRIES": "0",
    } | env
    stack.run("db", "upgrade")
    stack.run("users", "create", "ada", "--password", PASSWORD)


def start_worker(stack: Stack, name: str) -> Proc:
    return stack.start(name, [eonyx_executable(), "worker", "--concurrency", "2"])


@contextmanager
def signed_in(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as http:
        login = http.post("/api/v1/auth/login", json={"username": "ada", "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        yield http


def transcript(http: httpx.Client, session_id: str) -> list[tuple[str, Any]]:
    response = http.get(f"/api/v1/sessions/{session_id}/messages")
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"]) for m in response.json()["items"]]


def test_a_session_whose_replica_died_mid_turn_answers_through_the_other(
    stack: Stack, fake_llm: FakeLLM
) -> None:
    """The turn lock of a killed replica lapses within its TTL (not the two hours of a lock
    sized for the longest turn): the user's saved message is answered by a retry through
    the other replica, and the session takes new turns."""
    slow = SlowOnce(lambda request: "while the replica dies" in json.dumps(request.body))
    fake_llm.set_default(slow)
    prepare(stack, fake_llm)
    workers = [start_worker(stack, f"worker{n}") for n in (1, 2)]
    (doomed, doomed_url), (survivor, survivor_url) = (start_api(stack, f"api{n}") for n in (1, 2))
    with signed_in(doomed_url) as first, signed_in(survivor_url) as other:
        session_id = first.post("/api/v1/sessions", json={}).json()["id"]
        assert first.post(f"/api/v1/sessions/{session_id}/turns", json={"content": "Hi"}).is_success

        def doomed_turn() -> None:
            with contextlib.suppress(httpx.TransportError):  # its replica was killed under it
                first.post(
                    f"/api/v1/sessions/{session_id}/turns",
                    json={"content": "Answer me while the replica dies"},
                    timeout=HANGS,
                )

        asking = threading.Thread(target=doomed_turn, daemon=True)
        asking.start()
        assert slow.held.wait(60), f"the turn never reached the model:\n{doomed.output()}"
        kill(doomed)
        asking.join(30)
        killed_at = time.monotonic()

        # The user's message was saved before the model was called, and stays unanswered.
        assert transcript(other, session_id)[-1] == ("user", "Answer me while the replica dies")

        def retried() -> httpx.Response | None:
            survivor.check_running()
            left = RECOVERY - (time.monotonic() - killed_at)
            try:
                response = other.post(
                    f"/api/v1/sessions/{session_id}/turns",
                    json={"retry": True},
                    timeout=max(left, 1.0),
                )
            except httpx.TimeoutException:
                return None  # the deadline below fails the test
            assert response.status_code in (200, 409), response.text
            return response if response.status_code == 200 else None

        answered = wait_for(retried, RECOVERY, "the session to answer through the other replica")
        assert answered.json()["assistant_message"]["content"] == "Answer me while the replica dies"
        # Usable as before: a new turn, and the message saved once, answered once.
        again = other.post(f"/api/v1/sessions/{session_id}/turns", json={"content": "And now?"})
        assert again.status_code == 200, again.text
        assert transcript(other, session_id) == [
            ("user", "Hi"),
            ("assistant", "Hi"),
            ("user", "Answer me while the replica dies"),
            ("assistant", "Answer me while the replica dies"),
            ("user", "And now?"),
            ("assistant", "And now?"),
        ]
    for proc in (survivor, *workers):
        proc.check_running()


def test_a_curation_whose_worker_died_is_redone_by_the_other_worker(
    stack: Stack, fake_llm: FakeLLM
) -> None:
    """A like's curation in the hands of a worker that is SIGKILLed is delivered again by
    Redis once its visibility timeout has passed (no beat runs here, so no sweep helps) and
    is done by the other worker, once the dead one's job lock has lapsed."""
    slow = SlowOnce(is_curation)
    fake_llm.set_default(slow)
    prepare(stack, fake_llm, JOB_VISIBILITY_TIMEOUT_SECONDS="20")
    doomed = start_worker(stack, "worker1")
    apis = [start_api(stack, f"api{n}") for n in (1, 2)]
    with signed_in(apis[0][1]) as first, signed_in(apis[1][1]) as other:
        session_id = first.post("/api/v1/sessions", json={}).json()["id"]
        turn = first.post(
            f"/api/v1/sessions/{session_id}/turns", json={"content": "I deploy with Podman"}
        )
        assert turn.status_code == 200, turn.text
        message_id = turn.json()["assistant_message"]["id"]
        liked = other.post(f"/api/v1/sessions/{session_id}/messages/{message_id}/like")
        assert liked.status_code == 202, liked.text

        # The only worker so far takes the job; a second joins; the first is killed mid-call.
        assert slow.held.wait(60), f"the curation never reached the model:\n{doomed.output()}"
        survivor = start_worker(stack, "worker2")
        wait_for(
            lambda: survivor.check_running() or " ready" in survivor.output(),
            60,
            f"the second worker to start:\n{survivor.output()}",
        )
        kill(doomed)

        def saved() -> bool:
            survivor.check_running()
            items = other.get(f"/api/v1/sessions/{session_id}/messages").json()["items"]
            like = next(m["like"] for m in items if m["id"] == message_id)
            assert like["status"] in ("saving", "saved"), like
            return like["status"] == "saved"

        wait_for(saved, JOB_REDONE, f"the other worker to redo the job:\n{survivor.output()}")
        memory = other.get("/api/v1/memory/agent").json()["content"]
        assert memory.count(MEMORY_ENTRY) == 1
        assert sum(is_curation(r) for r in fake_llm.completions) == 2  # the lost call, the redo
