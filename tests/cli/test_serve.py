"""`eonyx serve` end to end: one command on an empty DATA_DIR, no outside service.

It starts an embedded Redis, a worker process and gunicorn, answers HTTP and the events
WebSocket, runs background jobs in the worker (never in the request), logs requests without
their query string, and on Ctrl+C stops everything it started and exits 0.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from simple_websocket import Client as WebSocket
from simple_websocket import ConnectionClosed

from tests.cli.serving import (
    Served,
    admin_client,
    alive,
    children_of,
    command_line,
    descendants_of,
    eonyx,
    ready,
    wait_for_job,
    zombie_or_gone,
)
from tests.conftest import free_port, wait_for

pytestmark = pytest.mark.slow


def json_lines(output: str) -> list[dict]:
    """The JSON log lines (LOG_FORMAT's default) among what serve printed."""
    found = []
    for line in output.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                found.append(json.loads(line))
    return found


def metrics_directory_of(pid: int) -> Path:
    """The PROMETHEUS_MULTIPROC_DIR a process of serve's was started with."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    found = [v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return Path(found[0].split(b"=", 1)[1].decode())


ALL_READY = {"database": "ok", "store": "ok", "broker": "ok", "worker": "ok", "beat": "ok"}


def test_serve_runs_everything_and_stops_cleanly_on_ctrl_c(
    start_serve: Callable[..., Served],
) -> None:
    served = start_serve("--workers", "2", "--connections", "200")
    data_dir = served.data_dir
    assert not data_dir.exists()
    url = served.wait_url()
    redis_socket = data_dir / "run" / "redis.sock"
    assert redis_socket.exists()
    assert (data_dir / "eonyx.db").is_file()  # SQLite in DATA_DIR: no DATABASE_URL needed

    with admin_client(served, url) as http:
        assert http.get("/healthz").status_code == 200
        assert wait_for(lambda: ready(http), 30, "/readyz")["checks"] == ALL_READY

        ids = []
        for title in ("First", "Second"):
            response = http.post("/api/v1/sessions", json={"title": title})
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        listing = http.get("/api/v1/sessions")
        assert listing.status_code == 200
        assert [item["id"] for item in listing.json()["items"]] == ids[::-1]  # newest first

        queued = http.post("/api/v1/index/rebuild")
        assert queued.status_code == 202, queued.text
        result = wait_for_job(http, queued.json()["id"])["result"]

    # The job ran in the worker, a child process of serve, not in the request.
    worker_pid = result["pid"]
    assert worker_pid != served.process.pid
    assert result["scanned"] == 2
    assert served.child(" worker --beat") == worker_pid
    # HTTP is gunicorn, a master with the two worker processes asked for.
    master = served.child("gunicorn")
    assert len(children_of(master)) == 2
    everything = descendants_of(served.process.pid)
    assert len(children_of(served.process.pid)) == 3, "a worker, gunicorn and a Redis"

    # A second serve on the same DATA_DIR refuses instead of stealing the Redis socket.
    second = eonyx(served.env, "serve", "--port", str(free_port()))
    assert second.returncode != 0
    assert f"Eonyx already runs on {data_dir} at {url} (pid {served.process.pid})" in second.stderr
    assert redis_socket.exists()

    served.stop_with_ctrl_c()
    assert not redis_socket.exists()
    assert not alive(worker_pid)
    left = [pid for pid in everything if not zombie_or_gone(pid)]
    assert not left, f"processes left behind by serve: {left}"


def test_the_events_socket_works_under_gunicorn_and_its_token_is_not_logged(
    start_serve: Callable[..., Served],
) -> None:
    served = start_serve()
    url = served.wait_url()
    assert "gunicorn" in command_line(served.child("gunicorn"))
    with admin_client(served, url) as http:
        token = http.headers["Authorization"].removeprefix("Bearer ")
        ws_url = url.replace("http://", "ws://") + f"/api/v1/events?token={token}"
        ws = WebSocket.connect(ws_url)
        try:
            ready = ws.receive(10)
            assert ready is not None, f"no 'ready' in 10 s; the server said:\n{served.output}"
            assert json.loads(ready) == {"type": "ready"}
            saved = http.put("/api/v1/memory/user", json={"content": "- Likes tables\n"})
            assert saved.status_code == 200, saved.text
            event = json.loads(ws.receive(10))
            assert event["type"] == "memory.updated"
            assert event["file"] == "USER.md"
        finally:
            ws.close()
        refused = WebSocket.connect(url.replace("http://", "ws://") + "/api/v1/events?token=nope")
        seen: list[object] = []

        def receive_five() -> None:
            seen.extend(json.loads(refused.receive(10) or "null") for _ in range(5))

        with pytest.raises(ConnectionClosed):
            receive_five()
        assert {"type": "ready"} not in seen  # closed on a bad token, never listening
        # Not a WebSocket: answered, and logged like any request, by its path alone.
        assert httpx.get(f"{url}/api/v1/events?token={token}").status_code == 400

    def logged() -> bool:
        return any(
            (line.get("method"), line.get("path"), line.get("status"))
            == ("GET", "/api/v1/events", 400)
            for line in json_lines(served.output)
        )

    wait_for(logged, 10, f"the events request in the access log:\n{served.output}")
    served.stop_with_ctrl_c()
    assert token not in served.output
    assert "nope" not in served.output
    assert "?token" not in served.output


def test_server_commands_find_the_running_servers_settings(
    start_serve: Callable[..., Served], tmp_path: Path
) -> None:
    """A second shell with only DATA_DIR set acts on the server's database (here not the
    default one), says which, and never sees the server's secrets."""
    database = tmp_path / "elsewhere" / "eonyx.db"
    database.parent.mkdir()
    served = start_serve(
        DATABASE_URL=f"sqlite:///{database}",
        USER_CHAR_LIMIT="999",
        EONYX_LLM_BASE_URL="http://127.0.0.1:9/v1",
        EONYX_LLM_MODEL="some-model",
        EONYX_LLM_API_KEY="sk-do-not-write-me",
    )
    url = served.wait_url()
    settings_file = served.data_dir / "run" / "settings.json"
    written = json.loads(settings_file.read_text())
    assert written["url"] == url
    assert written["pid"] == served.process.pid
    assert written["environment"]["DATABASE_URL"] == f"sqlite:///{database}"
    assert written["environment"]["USER_CHAR_LIMIT"] == "999"
    assert "sk-do-not-write-me" not in settings_file.read_text()
    assert settings_file.stat().st_mode & 0o077 == 0

    (tmp_path / "other-home").mkdir()
    second_shell = {
        key: value
        for key, value in served.env.items()
        if key not in ("DATABASE_URL", "USER_CHAR_LIMIT", "EONYX_LLM_API_KEY")
        and not key.startswith("EONYX_LLM_")
    } | {"HOME": str(tmp_path / "other-home")}
    created = eonyx(second_shell, "users", "create", "ada", "--password", "long password")
    assert created.returncode == 0, created.stderr
    assert f"database sqlite:///{database}" in created.stderr
    assert f"data directory {served.data_dir}" in created.stderr
    assert f"settings of the server at {url}" in created.stderr
    models = eonyx(second_shell, "models", "list")
    assert models.returncode == 0, models.stderr
    assert "default  some-model at http://127.0.0.1:9/v1" in models.stdout
    assert "(unset here)" in models.stdout  # the key stayed with the server

    with httpx.Client(base_url=url, timeout=10) as http:
        ada = {"username": "ada", "password": "long password"}
        login = http.post("/api/v1/auth/login", json=ada)
        assert login.status_code == 200, login.text  # the server sees the user just created

    served.stop_with_ctrl_c()
    assert not settings_file.exists()
    after = eonyx(second_shell, "users", "list")  # no server: its own defaults again
    assert after.returncode == 0, after.stderr
    assert "settings of the server" not in after.stderr
    assert "ada" not in after.stdout


def test_dev_mode_serves_with_the_reloading_server_and_stops_cleanly(
    start_serve: Callable[..., Served],
) -> None:
    served = start_serve("--dev")
    url = served.wait_url()
    assert "cli.devserver" in command_line(served.child("cli.devserver"))
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.get("/healthz").status_code == 200
        assert http.get("/api/v1/events?token=secret-in-query").status_code == 400
        assert wait_for(lambda: ready(http), 30, "/readyz")["checks"] == ALL_READY
    everything = descendants_of(served.process.pid)
    assert "Restarting with" in served.output or "reloader" in served.output.lower()
    served.stop_with_ctrl_c()
    assert "secret-in-query" not in served.output
    assert "GET /api/v1/events HTTP/1.1" in served.output
    left = [pid for pid in everything if not zombie_or_gone(pid)]
    assert not left, f"processes left behind by serve --dev: {left}"


def test_metrics_of_every_process_of_serve_answer_at_one_url(
    start_serve: Callable[..., Served],
) -> None:
    """Two gunicorn workers and the background worker sum their metrics in one directory:
    whichever HTTP worker answers /metrics shows every turn and the worker's jobs."""
    token = "serve-metrics-token-0123"
    served = start_serve("--workers", "2", "--connections", "200", METRICS_TOKEN=token)
    url = served.wait_url()
    with admin_client(served, url) as http:
        session = http.post("/api/v1/sessions", json={"title": "Watched"}).json()["id"]
        for _ in range(6):  # no model: each turn is refused (503), spread over both workers
            http.post(f"/api/v1/sessions/{session}/turns", json={"content": "hi"})
        queued = http.post("/api/v1/index/rebuild")
        assert queued.status_code == 202, queued.text
        wait_for_job(http, queued.json()["id"])
        assert http.get("/metrics").status_code == 401  # the login token is not the metrics one
        traced = http.get("/api/v1/sessions", headers={"X-Request-Id": "serve-access-1"})
        assert traced.headers["X-Request-Id"] == "serve-access-1"

        def scraped() -> str | None:
            response = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200, response.text
            text = response.text
            done = 'eonyx_job_runs_total{task="eonyx.index.rebuild"} 1.0' in text
            return text if done else None

        text = wait_for(scraped, 30, "the worker's job in /metrics")
    assert 'eonyx_turn_seconds_count{outcome="error"} 6.0' in text, text

    def access_line() -> dict | None:  # gunicorn's, in JSON, with the id the app answered
        lines = json_lines(served.output)
        return next((line for line in lines if line.get("request_id") == "serve-access-1"), None)

    line = wait_for(access_line, 10, f"the access line:\n{served.output[-3000:]}")
    assert (line["method"], line["path"], line["status"]) == ("GET", "/api/v1/sessions", 200)
    # The memory-mapped files on the RAM disk, never on DATA_DIR's (where a full disk would
    # kill the HTTP workers with SIGBUS; tests/cli/test_serve_disk.py); gone after a stop.
    directory = metrics_directory_of(served.child("gunicorn"))
    assert directory.parent == Path("/dev/shm")
    assert directory.name.startswith("eonyx-metrics-")
    assert directory.stat().st_mode & 0o777 == 0o700  # made by serve, for its own account
    assert any(directory.glob("*.db"))
    served.stop_with_ctrl_c()
    assert not directory.exists()


def test_the_version_is_the_same_everywhere(start_serve: Callable[..., Served]) -> None:
    """`eonyx --version` and /healthz say the installed distribution's version, the one
    place a release sets it (pyproject.toml); the MCP server's is checked in test_mcp."""
    from importlib.metadata import version

    served = start_serve()
    url = served.wait_url()
    said = eonyx(served.env, "--version")
    assert said.stdout.strip() == f"eonyx, version {version('eonyx')}"
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok", "version": version("eonyx")}
