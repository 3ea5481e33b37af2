"""`eonyx models`: the model catalog and task roles (server-side: reads the server's settings)."""

from __future__ import annotations

import click

from cli.server import server_runtime
from shared.core.text import printable
from shared.llm import models


@click.group("models")
def models_group() -> None:
    """Model offerings and which one serves each task role."""


@models_group.command("list")
def models_list() -> None:
    """List the offerings."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            offerings = models.list_offerings(db, rt.settings)
        if not offerings:
            click.echo(
                "no offerings: set EONYX_LLM_BASE_URL and EONYX_LLM_MODEL, or `eonyx models add`"
            )
        for o in offerings:
            window = f"{o.context_window:,} tokens" if o.context_window else "no window set"
            key = f"key from {o.api_key_env}" + ("" if o.api_key_set else " (unset here)")
            key = key if o.api_key_env else "no key"
            shown = printable(f"{o.id}  {o.model} at {o.base_url}")
            click.echo(f"{shown}  [{window}; {key}]")


@models_group.command("add")
@click.argument("offering_id")
@click.option("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. https://.../v1")
@click.option("--model", required=True, help="The provider's model name.")
@click.option("--api-key-env", help="Name of the environment variable holding the API key.")
@click.option("--context-window", type=click.IntRange(1), help="Tokens; enables compaction.")
@click.option("--max-output-tokens", type=click.IntRange(1))
def models_add(
    offering_id: str,
    base_url: str,
    model: str,
    api_key_env: str | None,
    context_window: int | None,
    max_output_tokens: int | None,
) -> None:
    """Add an offering."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            models.add_offering(
                db,
                id=offering_id,
                base_url=base_url,
                model=model,
                api_key_env=api_key_env,
                context_window=context_window,
                max_output_tokens=max_output_tokens,
            )
        click.echo(f"added offering {offering_id}")


@models_group.group("role")
def role() -> None:
    """Task roles: chat, session_title, user_memory_extraction, agent_memory_curation,
    summarization."""


@role.command("set")
@click.argument("role_name", metavar="ROLE", type=click.Choice(models.ROLES))
@click.argument("offering_id")
def role_set(role_name: str, offering_id: str) -> None:
    """Make OFFERING_ID serve ROLE."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            models.set_role(db, rt.settings, role_name, offering_id)
        click.echo(f"{role_name} -> {offering_id}")


@role.command("list")
def role_list() -> None:
    """Show which offering serves each role."""
    with server_runtime() as rt:
        with rt.db.session() as db:
            bindings = models.role_bindings(db, rt.settings)
        for name, (offering_id, explicit) in bindings.items():
            how = "" if explicit or name == "chat" else "  (falls back to chat)"
            click.echo(f"{name:<24}{offering_id or '(none)'}{how}")
