"""Fixtures for the client commands: a live server on loopback and a CLI runner for it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from werkzeug.serving import make_server

from cli import main


@pytest.fixture
def server_url(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.port}"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def runner(tmp_path: Path, server_url: str) -> CliRunner:
    return CliRunner(
        env={
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "EONYX_URL": server_url,
            "EONYX_TOKEN": None,
        }
    )


def login(runner: CliRunner, username: str = "alice", password: str = "correct horse"):
    return runner.invoke(main, ["login"], input=f"{username}\n{password}\n")
