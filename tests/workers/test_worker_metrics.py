"""A worker in its own container serves its metrics on METRICS_PORT, for the metrics token
only (workers/observability.py); what it serves is the worker's job metrics."""

from __future__ import annotations

from pathlib import Path

import httpx

from shared.core import metrics
from shared.core.settings import load_settings
from tests.conftest import free_port, wait_for
from workers.observability import serve_metrics

TOKEN = "worker-metrics-token-01"


def test_the_worker_metrics_port_answers_the_token_only(tmp_path: Path) -> None:
    port = free_port()
    settings = load_settings(
        {
            "DATA_DIR": str(tmp_path / "data"),
            "HOME": str(tmp_path),
            "METRICS_TOKEN": TOKEN,
            "METRICS_PORT": str(port),
        }
    )
    recorder = metrics.enable(settings)
    recorder.job_finished("eonyx.test.job", 0.25, failed=True)
    server = serve_metrics(settings, recorder.render)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(url), 10, "the metrics port")
        assert httpx.get(f"{url}/metrics").status_code == 401
        wrong = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer not-the-token!!"})
        assert wrong.status_code == 401
        assert httpx.get(f"{url}/other", headers=_auth()).status_code == 404
        page = httpx.get(f"{url}/metrics", headers=_auth())
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/plain")
        assert 'eonyx_job_failures_total{task="eonyx.test.job"}' in page.text
    finally:
        server.shutdown()
        server.server_close()


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/metrics", timeout=1)
    except httpx.TransportError:
        return False
    return True
