"""`eonyx serve` logs each request without its query string (a browser's WebSocket sends its
bearer token as `?token=`)."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from flask import Flask
from werkzeug.serving import make_server

from cli.devserver import RequestLogHandler


@pytest.fixture
def served() -> Iterator[str]:
    app = Flask(__name__)

    @app.get("/api/v1/events")
    def events() -> str:
        return "ok"

    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=RequestLogHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.port}"
    server.shutdown()
    server.server_close()


def test_the_request_line_is_logged_without_the_query(
    served: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="werkzeug")
    assert httpx.get(f"{served}/api/v1/events?token=secret&x=1").status_code == 200
    assert httpx.get(f"{served}/nowhere?token=secret").status_code == 404
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert any("GET /api/v1/events HTTP/1.1" in line and '" 200 ' in line for line in lines)
    assert any("/nowhere" in line and " 404 " in line for line in lines)
    assert not [line for line in lines if "secret" in line]


def test_a_malformed_request_line_is_logged_without_the_query(
    served: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="werkzeug")
    address = urlsplit(served)
    with socket.create_connection((address.hostname, address.port)) as raw:
        raw.sendall(b"GET /api/v1/events?token=secret HTTP/1.1 extra\r\n\r\n")
        assert b"400" in raw.recv(4096)  # an error page (no status line for a bad version)
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert lines
    assert not [line for line in lines if "secret" in line]
