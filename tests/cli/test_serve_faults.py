"""`eonyx serve` survives its worker being killed: it starts the worker again, the jobs the
dead worker held are redone (the memory sweep), and nothing it started outlives it, even
when serve itself is killed outright.

Slow by nature (the redo waits for the dead worker's job locks to lapse and for the next
sweep: about a minute), and part of `make test` all the same.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable

import httpx
import pytest

from tests.cli.serving import (
    PASSWORD,
    Served,
    admin_client,
    children_of,
    command_line,
    descendants_of,
    ready,
    zombie_or_gone,
)
from tests.conftest import free_port, wait_for
from tests.fake_llm import FAKE_MODEL, FakeLLM, RecordedRequest, Reply, text

pytestmark = pytest.mark.slow

LIKES = 12
REDONE_WITHIN = 120.0  # seconds from the worker being back to every like saved
CURATION = "You curate an assistant's notes"


def is_curation(request: RecordedRequest) -> bool:
    return str(request.messages[0].get("content", "")).startswith(CURATION)


def like_statuses(http: httpx.Client, session_id: str) -> dict[str, str]:
    response = http.get(f"/api/v1/sessions/{session_id}/messages")
    assert response.status_code == 200, response.text
    return {
        m["id"]: m["like"]["status"]
        for m in response.json()["items"]
        if m["role"] == "user" and "like" in m
    }


def test_a_killed_worker_is_restarted_and_every_queued_like_ends_saved(
    start_serve: Callable[..., Served], fake_llm: FakeLLM
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if is_curation(request):  # slow enough that jobs are in the worker's hands at the kill
            return text(json.dumps({"operations": []}), delay=1.0)
        return text("Noted.")

    fake_llm.set_default(answer)
    served = start_serve(EONYX_LLM_BASE_URL=fake_llm.base_url, EONYX_LLM_MODEL=FAKE_MODEL)
    url = served.wait_url()
    with admin_client(served, url) as http:
        wait_for(lambda: ready(http), 30, "/readyz")
        session_id = http.post("/api/v1/sessions", json={"title": "Likes"}).json()["id"]
        pairs = []
        for n in range(LIKES):
            turn = http.post(f"/api/v1/sessions/{session_id}/turns", json={"content": f"#{n}"})
            assert turn.status_code == 200, turn.text
            pairs.append(turn.json()["user_message"]["id"])
        worker = served.child(" worker --beat")
        beat = children_of(worker)
        assert beat, "the worker runs beat as a process of its own"
        for pair_id in pairs:
            liked = http.post(f"/api/v1/sessions/{session_id}/messages/{pair_id}/like")
            assert liked.status_code in (200, 202), liked.text

        def curating() -> bool:
            return sum(map(is_curation, fake_llm.requests)) >= 2

        wait_for(curating, 30, "the worker to take the first curation jobs")
        os.kill(worker, signal.SIGKILL)

        def restarted() -> int | None:
            found = [p for p in children_of(served.process.pid) if p != worker]
            found = [p for p in found if "worker --beat" in command_line(p)]
            return found[0] if found else None

        new_worker = wait_for(restarted, 30, f"serve to start a new worker:\n{served.output}")
        back = time.monotonic()
        assert "the worker was killed by SIGKILL; starting it again" in served.output
        assert all(zombie_or_gone(pid) for pid in beat), "the dead worker's beat lives on"
        assert len(like_statuses(http, session_id)) == LIKES

        def all_saved() -> bool:
            statuses = like_statuses(http, session_id)
            assert "failed" not in statuses.values(), statuses
            return set(statuses.values()) == {"saved"}

        wait_for(all_saved, REDONE_WITHIN, f"every like saved:\n{like_statuses(http, session_id)}")
        print(f"every like saved {time.monotonic() - back:.1f} s after the worker was back")
        assert ready(http) is not None

    everything = set(descendants_of(served.process.pid)) | {worker, *beat}
    assert new_worker in everything
    served.stop_with_ctrl_c()
    left = [pid for pid in everything if not zombie_or_gone(pid)]
    assert not left, f"processes left behind by serve: {left}"


def test_a_killed_serve_leaves_nothing_running_and_starts_again_at_once(
    start_serve: Callable[..., Served],
) -> None:
    """SIGKILL of serve alone (the OOM killer, `kill -9`): gunicorn and its workers, the
    worker and its beat, and the embedded Redis die with it; a start on the same port and
    DATA_DIR then works at once, and removes the run files the dead one left."""
    port = str(free_port())
    served = start_serve("--port", port)
    url = served.wait_url()
    with admin_client(served, url) as http:
        wait_for(lambda: ready(http), 30, "/readyz")
        created = http.post("/api/v1/sessions", json={"title": "Kept"})
        assert created.status_code == 201, created.text
    worker = served.child(" worker --beat")
    beat = children_of(worker)
    assert beat, "the worker runs beat as a process of its own"
    gunicorn = served.child("gunicorn")
    assert children_of(gunicorn), "gunicorn's workers"
    everything = descendants_of(served.process.pid)
    assert len(everything) >= 6  # Redis, gunicorn and 2 workers, the worker and its beat
    run_file = served.data_dir / "run" / "settings.json"
    assert run_file.exists()

    os.kill(served.process.pid, signal.SIGKILL)
    served.process.wait(10)

    def left() -> list[tuple[int, str]]:
        return [(pid, command_line(pid)) for pid in everything if not zombie_or_gone(pid)]

    try:
        wait_for(lambda: not left(), 30, "every process of the killed serve to end")
    finally:
        orphans = left()
        for pid, _ in orphans:
            os.kill(pid, signal.SIGKILL)
    assert not orphans
    assert run_file.exists()  # a SIGKILL leaves its files: the next start removes them

    again = start_serve("--port", port)
    assert again.wait_url() == url, again.output
    assert f"(pid {served.process.pid}) left: run files" in again.output
    with httpx.Client(base_url=url, timeout=10) as http:
        login = http.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        assert wait_for(lambda: ready(http), 30, "/readyz after the restart")
        titles = [s["title"] for s in http.get("/api/v1/sessions").json()["items"]]
        assert titles == ["Kept"]
    assert json.loads(run_file.read_text())["pid"] == again.process.pid
    again.stop_with_ctrl_c()
