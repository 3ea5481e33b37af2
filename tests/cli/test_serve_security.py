"""`eonyx serve` keeps its store to itself and names its cookie after the scheme it is reached
by: files 0600 and folders 0700 whatever the umask it was started with, an older store put
right at start with one log line, and `__Host-eonyx_session` behind a TLS proxy."""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.cli.serving import PASSWORD, Served, admin_client, ready
from tests.conftest import wait_for
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.slow
FIXED_LINE = "removed group and other access from"


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """serve started from a shell with the usual umask (022), which its children inherit."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def open_paths(root: Path) -> list[str]:
    """Every path under root (root too) that its group or others may use."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(root)} {oct(stat.S_IMODE(mode))}")
    return found


def png() -> dict[str, object]:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (30, 120, 200)).save(out, "PNG")
    url = "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


def use_everything(http: httpx.Client) -> None:
    """What writes to the store: a session and a turn with an image (the worker adds its
    title), memory files and their backups, a like (the worker's curation)."""
    session = http.post("/api/v1/sessions", json={}).json()["id"]
    turn = http.post(
        f"/api/v1/sessions/{session}/turns",
        json={"content": [{"type": "text", "text": "What is this?"}, png()]},
    )
    assert turn.status_code == 200, turn.text
    for kind in ("user", "agent", "user"):
        saved = http.put(f"/api/v1/memory/{kind}", json={"content": f"- likes {kind}s\n"})
        assert saved.status_code == 200, saved.text
    answer = turn.json()["assistant_message"]["id"]
    liked = http.post(f"/api/v1/sessions/{session}/messages/{answer}/like")
    assert liked.status_code == 202, liked.text

    def settled() -> bool:
        items = http.get(f"/api/v1/sessions/{session}/messages").json()["items"]
        like = next(m for m in items if m["id"] == answer).get("like") or {}
        return like.get("status") in ("saved", "failed")

    wait_for(settled, 60, "the like's curation in the worker")


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


def serve_with_model(start_serve: Callable[..., Served], llm: FakeLLM) -> Served:
    return start_serve(
        EONYX_LLM_BASE_URL=llm.base_url,
        EONYX_LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="0",
        METRICS_TOKEN="a-metrics-token-of-24-chars",
    )


def test_the_store_is_private_and_an_older_one_is_put_right_at_start(
    start_serve: Callable[..., Served], llm: FakeLLM, usual_umask: None
) -> None:
    served = serve_with_model(start_serve, llm)
    url = served.wait_url()
    with admin_client(served, url) as http:
        wait_for(lambda: ready(http), 30, "/readyz")
        use_everything(http)
    data = served.data_dir
    for name in ("eonyx.db", "eonyx.db-wal", "eonyx.db-shm", "run/redis.sock"):
        assert (data / name).exists(), name
    assert list(data.glob("users/*/sessions/*/images/*.png"))
    assert list(data.glob("users/*/.agent/backups/USER.md.*"))
    assert open_paths(data) == []
    assert FIXED_LINE not in served.output  # nothing to put right in a new store
    served.stop_with_ctrl_c()

    # As an older Eonyx left it: folders 0755, files 0644.
    for path in [data, *data.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    again = start_serve(**served.env)
    again.wait_url()
    lines = [line for line in again.output.splitlines() if FIXED_LINE in line]
    assert len(lines) == 1, again.output  # one line, from serve; its children found nothing
    assert f"paths under {data}" in lines[0]
    assert open_paths(data) == []
    again.stop_with_ctrl_c()


def test_behind_a_tls_proxy_the_cookie_is_a_host_cookie(
    start_serve: Callable[..., Served], llm: FakeLLM
) -> None:
    """gunicorn takes X-Forwarded-Proto from a proxy it trusts (FORWARDED_ALLOW_IPS, by
    default 127.0.0.1): then the cookie is `__Host-eonyx_session`, Secure, Path=/."""
    served = serve_with_model(start_serve, llm)
    url = served.wait_url()
    with admin_client(served, url):  # creates the admin
        pass
    sign_in = {"username": "admin", "password": PASSWORD}
    with httpx.Client(base_url=url, timeout=10) as http:
        plain = http.post("/api/v1/auth/session", json=sign_in)
        proxied = http.post(
            "/api/v1/auth/session", json=sign_in, headers={"X-Forwarded-Proto": "https"}
        )
    assert plain.status_code == proxied.status_code == 200
    plain_cookie = plain.headers["set-cookie"]
    assert plain_cookie.startswith("eonyx_session=")
    assert "Secure" not in plain_cookie
    host_cookie = [part.strip() for part in proxied.headers["set-cookie"].split(";")]
    assert host_cookie[0].startswith("__Host-eonyx_session=")
    assert {"Secure", "HttpOnly", "Path=/", "SameSite=Strict"} <= set(host_cookie)
    assert proxied.headers["X-Frame-Options"] == "DENY"
