"""`eonyx tokens`: your API keys (for scripts, the /v1 facade, and coding agents over MCP)."""

from __future__ import annotations

import click

from cli.api_client import ApiClient, format_time
from shared.core.registry import SCOPE_MEMORY_READ, SCOPE_MEMORY_WRITE, SCOPE_SESSIONS_READ
from shared.core.text import printable

SCOPES = click.Choice([SCOPE_MEMORY_READ, SCOPE_MEMORY_WRITE, SCOPE_SESSIONS_READ])


@click.group()
def tokens() -> None:
    """Your API keys and sign-ins: make a key (limited to scopes if you like), list them,
    revoke one."""


@tokens.command("create")
@click.argument("name")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=SCOPES,
    help="Limit the key to this scope (repeat for more); without, it may do all you may.",
)
def tokens_create(name: str, scopes: tuple[str, ...]) -> None:
    """Make an API key called NAME; it is printed once, keep it."""
    made = ApiClient.from_config().create_token(name, list(scopes))
    click.echo(made["token"])
    limited = ", ".join(made["scopes"]) if made["scopes"] else "full access"
    click.echo(f"API key {made['id']} ({limited}); it is not shown again", err=True)


@tokens.command("list")
def tokens_list() -> None:
    """Your live keys and sign-ins, oldest first."""
    for token in ApiClient.from_config().tokens():
        scopes = ", ".join(token["scopes"]) if token["scopes"] else "full access"
        used = format_time(token["last_used_at"]) if token["last_used_at"] else "never used"
        name = printable(token["name"])
        click.echo(f"{token['id']}  {token['source']:<7}  {name}  ({scopes}; {used})")


@tokens.command("revoke")
@click.argument("token_id")
def tokens_revoke(token_id: str) -> None:
    """Revoke the key or sign-in TOKEN_ID (from `eonyx tokens list`)."""
    ApiClient.from_config().revoke_token(token_id)
    click.echo(f"revoked {token_id}")


COMMANDS = [tokens]
