"""Where the client commands find the server and the token `eonyx login` saved
(`~/.config/eonyx/config.json`, or EONYX_URL / EONYX_TOKEN)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cli.api_error import ApiError

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "eonyx" / "config.json"


def load_config() -> dict[str, Any]:
    try:
        return json.loads(config_path().read_text())  # type: ignore[no-any-return]
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
    return str(
        override or os.environ.get("EONYX_URL") or load_config().get("url") or DEFAULT_URL
    ).rstrip("/")


def saved_login() -> tuple[str, str]:
    """(server URL, token) from EONYX_URL/EONYX_TOKEN or what `eonyx login` saved."""
    token = os.environ.get("EONYX_TOKEN") or load_config().get("token")
    if not token:
        raise ApiError(0, "", "not logged in: run `eonyx login` first", hint="")
    return server_url(), token
