"""`eonyx mcp`: runs the MCP server of cli/mcp_server.py on stdio (for a coding agent on this
machine, with the saved login) or, with `--http`, the streamable-HTTP app of cli/mcp_http.py.

Apart from both so that neither imports the other: the HTTP app builds on the server, and
this command picks one of them.
"""

from __future__ import annotations

import anyio
import click

from cli.mcp_server import Accesses, build_server


async def serve_stdio(url: str, token: str) -> None:
    from mcp.server.stdio import stdio_server

    accesses = Accesses(url, token)
    server = build_server(accesses, stdio=True)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


@click.command()
@click.option(
    "--http", "http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio."
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="With --http: address to bind."
)
@click.option(
    "--port", default=8001, show_default=True, type=click.IntRange(0, 65535), help="With --http."
)
@click.option(
    "--url",
    "url",
    default=None,
    help="The Eonyx server (before EONYX_URL and the saved login's).",
)
@click.option(
    "--token",
    "token",
    default=None,
    help="On stdio: the Eonyx API key (before EONYX_TOKEN and the saved login's).",
)
@click.option(
    "--stateless",
    is_flag=True,
    help="With --http: no MCP sessions kept between requests (for replicas).",
)
def mcp(
    http: bool, host: str, port: int, url: str | None, token: str | None, stateless: bool
) -> None:
    """Serve your Eonyx memory and sessions to a coding agent over MCP.

    On stdio (the default) with the server and key of --url/--token, else of
    EONYX_URL/EONYX_TOKEN, else of `eonyx login`: an agent starts its MCP servers with a
    minimal environment, so give them as the agent passes environment (`claude mcp add eonyx
    -e EONYX_URL=... -e EONYX_TOKEN=... -- eonyx mcp`), or as flags. With --http, for remote
    agents, each request brings its Eonyx API key as a bearer token (`Authorization: Bearer
    eyx_...`), checked with the API (MCP_KEY_CHECK_SECONDS, MCP_SESSIONS_PER_KEY: see
    cli/mcp_http.py)."""

    from cli.config import saved_login, server_url

    if not http:
        anyio.run(serve_stdio, server_url(url), token or saved_login()[1])
        return
    if token:
        raise click.UsageError("--token is for stdio: over --http each request brings its key")
    import uvicorn

    from cli.mcp_http import http_app
    from shared.core.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    app = http_app(
        server_url(url),
        stateless=stateless,
        host=host,
        sessions_per_key=settings.mcp_sessions_per_key,
        key_check_seconds=settings.mcp_key_check_seconds,
    )
    click.echo(f"Eonyx MCP at http://{host}:{port}/mcp (for {server_url(url)})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


COMMANDS = [mcp]
