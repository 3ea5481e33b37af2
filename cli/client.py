"""Client commands: they talk HTTP to EONYX_URL with a token saved by `eonyx login`.

What they print of stored text (titles, names, the server's messages) goes through
`shared.core.text.printable`: a control character or a bidirectional override shows as an
escape such as `\x1b`, so a stored title cannot recolour the terminal or reorder a line.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import httpx

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


class Client:
    """A thin httpx wrapper that turns API errors into readable click errors."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=30)
        self.url = url

    @classmethod
    def from_config(cls) -> Client:
        return cls(*saved_login())

    def request(self, method: str, path: str, *, login_hint: bool = True, **kwargs: Any) -> Any:
        """The JSON answer; an API error becomes a click error with the server's reason
        (and, on a 401, a hint to log in again unless `login_hint` is off)."""
        response = self.send(method, path, login_hint=login_hint, **kwargs)
        return response.json() if response.content else None

    def send(
        self, method: str, path: str, *, login_hint: bool = True, **kwargs: Any
    ) -> httpx.Response:
        """The raw response of a successful call (a download); errors as `request` gives."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise click.ClickException(f"cannot reach Eonyx at {self.url}: {exc}") from None
        if response.status_code >= 400:
            code, message = error_of(response)
            message = f"{message} ({code})" if code else message
            if response.status_code == 401 and login_hint:
                message += "; run `eonyx login`"
            raise click.ClickException(message)
        return response


def error_of(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of an API error, safe to print; the raw text when the body is not
    Eonyx's JSON."""
    try:
        error = response.json()["error"]
        return printable(str(error["code"])), printable(str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return "", printable(response.text[:200] or response.reason_phrase)


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
        "POST",
        "/auth/login",
        json={"username": username, "password": password},
        login_hint=False,  # this is `eonyx login`: the server's reason says it all
    )
    save_config({**load_config(), "url": base, "token": result["token"]})
    click.echo(f"logged in to {base} as {printable(result['user']['username'])}")


COMMANDS = [login]
