"""Client commands: they talk HTTP to EONYX_URL with a token saved by `eonyx login`."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import httpx

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


class Client:
    """A thin httpx wrapper that turns API errors into readable click errors."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=30)
        self.url = url

    @classmethod
    def from_config(cls) -> Client:
        token = os.environ.get("EONYX_TOKEN") or load_config().get("token")
        if not token:
            raise click.ClickException("not logged in: run `eonyx login` first")
        return cls(server_url(), token)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise click.ClickException(f"cannot reach Eonyx at {self.url}: {exc}") from None
        if response.status_code >= 400:
            code, message = error_of(response)
            message = f"{message} ({code})" if code else message
            if response.status_code == 401:
                message += "; run `eonyx login`"
            raise click.ClickException(message)
        return response.json() if response.content else None


def error_of(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of an API error; the raw text when the body is not Eonyx's JSON."""
    try:
        error = response.json()["error"]
        return str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        return "", response.text[:200] or response.reason_phrase


def format_time(iso: str) -> str:
    """`YYYY/MM/DD HH:mm`, 24-hour, in local time: the same on every machine."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    return moment.strftime("%Y/%m/%d %H:%M")


@click.command()
@click.option("--url", help="Eonyx server URL (default: EONYX_URL or http://127.0.0.1:8000).")
@click.option("--username", prompt=True)
@click.option("--password", prompt=True, hide_input=True)
def login(url: str | None, username: str, password: str) -> None:
    """Log in and save a token for the other client commands."""
    base = server_url(url)
    result = Client(base, None).request(
        "POST", "/auth/login", json={"username": username, "password": password}
    )
    save_config({**load_config(), "url": base, "token": result["token"]})
    click.echo(f"logged in to {base} as {result['user']['username']}")


COMMANDS = [login]
