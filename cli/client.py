"""`eonyx login` and where the client commands find the server and the token it saved.

The client commands talk HTTP to EONYX_URL through cli/api_client.py with that token.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from cli.api_client import ApiClient, ApiError
from shared.core.text import printable

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "eonyx" / "config.json"


def load_config() -> dict[str, Any]:
    try:
        return json.loads(config_path().read_text())
    except (FileNotFoundError, ValueError):
        return {}


def save_config(config: dict[str, Any]) -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle, indent=2)
    os.replace(tmp, path)


def server_url(override: str | None = None) -> str:
    return (
        override or os.environ.get("EONYX_URL") or load_config().get("url") or DEFAULT_URL
    ).rstrip("/")


def saved_login() -> tuple[str, str]:
    """(server URL, token) from EONYX_URL/EONYX_TOKEN or what `eonyx login` saved."""
    token = os.environ.get("EONYX_TOKEN") or load_config().get("token")
    if not token:
        raise click.ClickException("not logged in: run `eonyx login` first")
    return server_url(), token


@click.command()
@click.option("--url", help="Eonyx server URL (default: EONYX_URL or http://127.0.0.1:8000).")
@click.option("--username", prompt=True)
@click.option("--password", prompt=True, hide_input=True)
def login(url: str | None, username: str, password: str) -> None:
    """Log in and save a token for the other client commands."""
    base = server_url(url)
    try:
        result = ApiClient(base, None).request(
            "POST", "/auth/login", json={"username": username, "password": password}
        )
    except ApiError as exc:  # this is `eonyx login`: the server's reason says it all
        raise ApiError(exc.status, exc.code, exc.reason, hint="") from None
    save_config({**load_config(), "url": base, "token": result["token"]})
    click.echo(f"logged in to {base} as {printable(result['user']['username'])}")


COMMANDS = [login]
