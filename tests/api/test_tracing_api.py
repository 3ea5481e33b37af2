"""Traces go out over OTLP only when OTEL_EXPORTER_OTLP_ENDPOINT is set; without it (and
without METRICS_TOKEN) Eonyx imports neither the tracing SDK, the exporter nor an
instrumentation, nor prometheus_client. (redis-py loads the OpenTelemetry API and metrics
SDK by itself when they are installed, for its own, unused, observability hooks.)

Each case builds an app in a child process: a tracer provider is global to a process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
from api.app import create_app
from shared.core import tracing
from shared.core.settings import load_settings

app = create_app(load_settings())
client = app.test_client()
assert client.get("/api/v1/sessions").status_code == 401
tracing.shutdown()  # flushes the spans still queued
ours = ("opentelemetry.instrumentation", "opentelemetry.exporter", "opentelemetry.sdk.trace",
        "prometheus_client")
loaded = sorted(m for m in sys.modules if m.startswith(ours))
print("LOADED", " ".join(loaded) or "-")
"""


class Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Collector.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_child(tmp_path: Path, **env: str) -> str:
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "METRICS_", "PROMETHEUS_")) and k != "REDIS_URL"
    }
    environ |= {"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)} | env
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=environ, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_without_an_endpoint_nothing_is_imported(tmp_path: Path, collector: str) -> None:
    assert "LOADED -" in run_child(tmp_path)
    assert Collector.received == []


def test_with_an_endpoint_the_requests_spans_are_exported(tmp_path: Path, collector: str) -> None:
    output = run_child(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=collector)
    assert "opentelemetry.instrumentation.flask" in output
    assert "prometheus_client" not in output  # metrics stay off without their token
    paths = [path for path, _ in Collector.received]
    assert paths
    assert set(paths) == {"/v1/traces"}
    body = b"".join(body for _, body in Collector.received)
    assert b"eonyx-api" in body  # the service name
    assert b"/api/v1/sessions" in body  # the server span of the request
