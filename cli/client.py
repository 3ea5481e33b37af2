"""`eonyx login`: saves a token for the other client commands (cli/config.py says where).

The client commands talk HTTP to EONYX_URL through cli/api_client.py with that token.
"""

from __future__ import annotations

import click

from cli.api_client import ApiClient
from cli.api_error import ApiError
from cli.config import load_config, save_config, server_url
from shared.core.text import printable


@click.command()
@click.option("--url", help="Eonyx server URL (default: EONYX_URL or http://127.0.0.1:8000).")
@click.option("--username", prompt=True)
@click.option("--password", prompt=True, hide_input=True)
def login(url: str | None, username: str, password: str) -> None:
    """Log in and save a token for the other client commands."""
    base = server_url(url)
    try:
        result = ApiClient(base, None).login(username, password)
    except ApiError as exc:  # this is `eonyx login`: the server's reason says it all
        raise ApiError(exc.status, exc.code, exc.reason, hint="") from None
    save_config({**load_config(), "url": base, "token": result["token"]})
    click.echo(f"logged in to {base} as {printable(result['user']['username'])}")


COMMANDS = [login]
