"""`eonyx serve` on a full disk: every write answers 503 `storage_error` with the reason,
/readyz says the store cannot write, no process dies (with metrics on, the memory-mapped
metrics files would SIGBUS the HTTP workers if they lived on that disk), a failed create
leaves no empty file, and once there is room again everything works as before.

The disk is a small tmpfs mounted as DATA_DIR, holding everything serve keeps there: the
session files, SQLite and the embedded Redis's append-only file. Mounting needs root (as in
CI); elsewhere these tests skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.serving import (
    PASSWORD,
    Served,
    admin_client,
    children_of,
    launch_serve,
    serve_environment,
)
from tests.conftest import wait_for
from tests.disks import empty, fill, needs_root, tmpfs
from tests.fake_llm import FAKE_MODEL, FakeLLM, text

pytestmark = [pytest.mark.slow, needs_root]

DISK = "24m"
METRICS = "disk-metrics-token-0123456789"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """tmp_path/data (serve's DATA_DIR) as a small tmpfs; unmounted after `serve_on` ends."""
    with tmpfs(tmp_path / "data", DISK) as data:
        yield data


@pytest.fixture
def serve_on(small_disk: Path, tmp_path: Path, fake_llm: FakeLLM) -> Iterator[Any]:
    started: list[Served] = []

    def start(**env: str) -> Served:
        fake_llm.set_default(lambda _request: text("Noted."))
        model = {"EONYX_LLM_BASE_URL": fake_llm.base_url, "EONYX_LLM_MODEL": FAKE_MODEL}
        served = launch_serve(serve_environment(tmp_path) | model | env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop(grace=20)


def prepared(http: httpx.Client) -> dict[str, Any]:
    """A session with a turn, a folder, an API key, a memory file with a backup, a bundle."""
    session = http.post("/api/v1/sessions", json={"title": "Before"}).json()["id"]
    turn = http.post(f"/api/v1/sessions/{session}/turns", json={"content": "hello"})
    assert turn.status_code == 200, turn.text
    folder = http.post("/api/v1/folders", json={"name": "Work"}).json()["id"]
    other = http.post("/api/v1/folders", json={"name": "Home"}).json()["id"]
    token = http.post("/api/v1/tokens", json={"name": "ci"}).json()["id"]
    for content in ("- Likes tea\n", "- Likes green tea\n"):
        assert http.put("/api/v1/memory/user", json={"content": content}).status_code == 200
    backup = http.get("/api/v1/memory/user/backups").json()[0]["name"]
    bundle = http.get(f"/api/v1/sessions/{session}/export?format=zip")
    assert bundle.status_code == 200
    return {
        "session": session,
        "message": turn.json()["user_message"]["id"],
        "folder": folder,
        "folders": [other, folder],  # the other way round
        "token": token,
        "backup": backup,
        "bundle": bundle.content,
    }


def write_calls(ids: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that writes, with a body it accepts on a disk with room."""
    session, api = ids["session"], "/api/v1"
    chat = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
    return [
        ("POST", f"{api}/sessions", {"json": {"title": "New"}}),
        ("POST", f"{api}/sessions/{session}/turns", {"json": {"content": "more"}}),
        ("PATCH", f"{api}/sessions/{session}", {"json": {"title": "Renamed"}}),
        ("POST", f"{api}/sessions/{session}/fork", {"json": {}}),
        ("POST", f"{api}/sessions/{session}/messages/{ids['message']}/like", {}),
        ("POST", f"{api}/sessions/{session}/clear", {}),
        ("DELETE", f"{api}/sessions/{session}", {}),
        (
            "POST",
            f"{api}/sessions/import",
            {"content": ids["bundle"], "headers": {"Content-Type": "application/zip"}},
        ),
        ("PUT", f"{api}/memory/user", {"json": {"content": "- Likes coffee\n"}}),
        ("PUT", f"{api}/memory/agent", {"json": {"content": "- Answer briefly\n"}}),
        ("PUT", f"{api}/memory/identity", {"json": {"content": "You are kind.\n"}}),
        ("POST", f"{api}/memory/user/backups/{ids['backup']}/restore", {}),
        ("POST", f"{api}/folders", {"json": {"name": "More"}}),
        ("PATCH", f"{api}/folders/{ids['folder']}", {"json": {"name": "Play"}}),
        ("PUT", f"{api}/folders/order", {"json": {"ids": ids["folders"]}}),
        ("PUT", f"{api}/devices/laptop/ui-state", {"json": {"sections_collapsed": {}}}),
        ("POST", f"{api}/tokens", {"json": {"name": "more"}}),
        ("DELETE", f"{api}/tokens/{ids['token']}", {}),
        ("POST", f"{api}/users", {"json": {"username": "bob", "password": "long password"}}),
        ("POST", f"{api}/auth/login", {"json": {"username": "admin", "password": PASSWORD}}),
        ("POST", f"{api}/index/rebuild", {}),
        ("POST", "/v1/chat/completions", {"json": chat}),
        ("POST", "/v1/responses", {"json": {"model": "default", "input": "hi"}}),
    ]


def http_workers(served: Served) -> tuple[int, list[int]]:
    master = served.child("gunicorn")
    return master, sorted(children_of(master))


@pytest.mark.parametrize("metrics", ["metrics on", "metrics off"])
def test_a_full_disk_answers_503_on_every_write_and_nothing_dies(
    serve_on: Any, small_disk: Path, metrics: str
) -> None:
    env = {"METRICS_TOKEN": METRICS} if metrics == "metrics on" else {}
    served: Served = serve_on(**env)
    url = served.wait_url()
    with admin_client(served, url) as http:
        wait_for(lambda: http.get("/readyz").status_code == 200, 30, "/readyz")
        ids = prepared(http)
        before = http_workers(served)
        worker = served.child(" worker --beat")
        if metrics == "metrics on":
            assert not (small_disk / "run" / "metrics").exists()  # on the RAM disk

        fill(small_disk)
        answers = {}
        for method, path, options in write_calls(ids):
            response = http.request(method, path, **options)
            answers[f"{method} {path}"] = (response.status_code, response.text[:300])
        # SQLite may still find room in its write-ahead log, and a file's last page room for
        # one more line: such a write is saved, and answered as saved. Anything else is a 503
        # storage_error with the reason, never a 500; what needs a new file always is.
        failed = {call: answer for call, answer in answers.items() if answer[0] >= 300}
        refused = {
            call: answer
            for call, answer in failed.items()
            if answer[0] != 503
            or '"storage_error"' not in answer[1]
            or not ("No space left on device" in answer[1] or "is full" in answer[1])
        }
        assert not refused, refused
        new_files = ("/sessions", "/fork", "/import", "/memory/user", "/memory/agent")
        assert {call for call in answers if call.endswith(new_files)} <= set(failed), answers
        assert len(failed) >= len(answers) // 2, answers  # most: the disk is full

        ready = http.get("/readyz")
        assert ready.status_code == 503
        checks = ready.json()["checks"]
        assert checks["store"] == "failed: cannot write: No space left on device"
        assert checks["broker"].startswith("failed: MISCONF"), checks  # its AOF is here too
        if metrics == "metrics on":
            scraped = http.get("/metrics", headers={"Authorization": f"Bearer {METRICS}"})
            assert scraped.status_code == 200

        assert http_workers(served) == before, served.output[-3000:]
        assert served.child(" worker --beat") == worker  # waiting for room, not dead
        assert "SIGBUS" not in served.output
        sessions = small_disk / "users"
        assert not [p for p in sessions.rglob("*.jsonl") if p.stat().st_size == 0]

        empty(small_disk)  # room again: the same server works on, nothing was lost
        wait_for(lambda: http.get("/readyz").status_code == 200, 60, "/readyz with room again")
        kept = http.get(f"/api/v1/sessions/{ids['session']}/messages")
        assert kept.status_code == 200, kept.text
        contents = [m["content"] for m in kept.json()["items"]]
        assert contents[:2] == ["hello", "Noted."], contents
        session = http.post("/api/v1/sessions", json={"title": "After"})
        assert session.status_code == 201, session.text
        turn = http.post(f"/api/v1/sessions/{session.json()['id']}/turns", json={"content": "hi"})
        assert turn.status_code == 200, turn.text
        assert http_workers(served) == before
        assert served.child(" worker --beat") == worker
        assert "starting it again" not in served.output  # serve restarted nothing
